"""One error shape for the whole API: {"detail": "..."} (plus "errors" per field on 422)."""
import logging

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler

from mailcore.errors import DomainError, ErrorCode, InvalidFields

log = logging.getLogger(__name__)


def _first_messages(errors, prefix: str = "") -> list[str]:
    if isinstance(errors, dict):
        lines = []
        for field, value in errors.items():
            name = f"{prefix}{field}" if field != "non_field_errors" else prefix.rstrip(".")
            lines += _first_messages(value, f"{name}." if name else "")
        return lines
    if isinstance(errors, list):
        if errors and all(isinstance(item, str) for item in errors):
            field = prefix.rstrip(".")
            return [f"{field}: {errors[0]}" if field else str(errors[0])]
        lines = []
        for index, item in enumerate(errors):
            if item:
                lines += _first_messages(item, f"{prefix}{index}.")
        return lines
    field = prefix.rstrip(".")
    return [f"{field}: {errors}" if field else str(errors)]


# The one mapping from domain error codes to HTTP statuses (the MCP tools report the same status).
HTTP_STATUS = {
    ErrorCode.INVALID: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.PAYMENT_REQUIRED: 402,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.INVALID_FIELDS: 422,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.UNAVAILABLE: 502,
    ErrorCode.STORAGE_FULL: 507,
}


def domain_error_response(exc: DomainError) -> Response:
    if isinstance(exc, InvalidFields):
        return validation_response(exc.message_dict)
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return Response({"detail": exc.detail}, status=HTTP_STATUS[exc.code], headers=headers)


def validation_detail(errors) -> str:
    """The one-line `detail` of a 422: the first message of each field, with its path."""
    return "Validation failed: " + ("; ".join(_first_messages(errors)) or "Invalid input.")


def validation_response(errors) -> Response:
    return Response({"detail": validation_detail(errors), "errors": errors},
                    status=HTTP_STATUS[ErrorCode.INVALID_FIELDS])


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": "The request body is too large."}, status=413)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, (ObjectDoesNotExist, Http404)):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    if isinstance(exc, exceptions.ValidationError):
        return validation_response(exc.detail)
    if isinstance(exc, DomainError) and exc.code == ErrorCode.RATE_LIMITED:
        exc = exceptions.Throttled(wait=exc.retry_after, detail=exc.detail)  # DRF's 429: detail + wait, Retry-After
    elif isinstance(exc, DomainError):
        return domain_error_response(exc)

    response = drf_exception_handler(exc, context)
    if response is None:
        log.exception("unhandled error in %s", context.get("view"), exc_info=exc)
        return Response({"detail": "Internal server error."}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    if not (isinstance(response.data, dict) and isinstance(response.data.get("detail"), str)):
        response.data = {"detail": str(response.data)}
    return response
