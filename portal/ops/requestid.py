"""A request id for every request: the proxy's X-Request-ID when it is a plain token, else a new
one. It is answered back in X-Request-ID and added to every log record made while the request runs."""
import contextvars
import logging
import re
import uuid

REQUEST_ID = contextvars.ContextVar("request_id", default="")
_TOKEN = re.compile(r"[A-Za-z0-9._-]{8,64}")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        offered = request.headers.get("X-Request-ID", "")
        request_id = offered if _TOKEN.fullmatch(offered) else uuid.uuid4().hex
        # Not reset on the way out: Django logs a 4xx/5xx ("Not Found: ...") after the middleware
        # returns, and that line belongs to this request. The next request on the thread sets its own.
        REQUEST_ID.set(request_id)
        response = self.get_response(request)
        response["X-Request-ID"] = request_id
        return response


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to each record (empty outside a request: workers, commands)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True
