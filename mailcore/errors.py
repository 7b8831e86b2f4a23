"""Domain errors carry a code; interfaces map codes to their own terms in one place each
(api.exceptions for HTTP statuses, the same table for MCP tool errors, PortalForm.add_service_error
for a page's fields). A service raises the error that says what happened; it never knows about HTTP,
and it never raises Django's ValidationError, which is for forms and serializers checking a shape."""
from collections.abc import Iterable, Mapping
from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID = "invalid"  # the request cannot be done as asked
    INVALID_FIELDS = "invalid_fields"  # values refused field by field (InvalidFields)
    UNAUTHORIZED = "unauthorized"  # no valid credential: unknown, wrong, expired or revoked
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


class InvalidFields(DomainError):
    """Values refused field by field, as a form's or a serializer's errors are: `message_dict` maps each
    field a caller gave to its messages (the API's 422 with `errors`, a page's messages beside its
    fields); `detail` is every message, joined."""

    code = ErrorCode.INVALID_FIELDS

    def __init__(self, errors: Mapping[str, str | Iterable[str]]):
        self.message_dict = {field: [messages] if isinstance(messages, str) else list(messages)
                             for field, messages in errors.items()}
        super().__init__("; ".join(self.messages))

    @property
    def messages(self) -> list[str]:
        return [message for messages in self.message_dict.values() for message in messages]
