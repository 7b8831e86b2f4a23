"""Domain errors carry a code; interfaces map codes to their own terms in one place each
(api.exceptions for HTTP statuses, the same table for MCP tool errors). A service raises the error
that says what happened; it never knows about HTTP."""
from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID = "invalid"  # the request cannot be done as asked
    FORBIDDEN = "forbidden"  # not allowed for this caller or in this state
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"  # it clashes with what exists
    PAYMENT_REQUIRED = "payment_required"  # needs a slot, an add-on or a payment
    RATE_LIMITED = "rate_limited"  # try again after retry_after seconds
    STORAGE_FULL = "storage_full"
    UNAVAILABLE = "unavailable"  # a server we depend on did not answer; retrying may help


class DomainError(Exception):
    """Base of every error a service raises for its caller to show; `detail` is for people."""

    code: ErrorCode = ErrorCode.INVALID

    def __init__(self, detail: str = "", *, retry_after: int | None = None):
        super().__init__(detail)
        self.retry_after = retry_after

    @property
    def detail(self) -> str:
        return str(self)

    @property
    def retryable(self) -> bool:
        return self.code in (ErrorCode.RATE_LIMITED, ErrorCode.UNAVAILABLE)
