"""Django-level error views: JSON for API paths and API clients, HTML pages for people."""
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import JsonResponse
from django.shortcuts import render
from django.views import defaults

# Bodies over DATA_UPLOAD_MAX_MEMORY_SIZE or the field and file counts: 413, not Django's 400.
TOO_LARGE = (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)

API_PREFIXES = (
    "/auth/", "/api-keys", "/mail/", "/inbox", "/protection", "/contacts", "/calendar", "/labels", "/webhooks",
    "/v1/", "/mcp", "/subscriptions/", "/partners/", "/openapi.json", "/t/",
)


def wants_json(request) -> bool:
    if request.path.startswith(API_PREFIXES):
        return True
    return "text/html" not in request.headers.get("Accept", "")


def page_not_found(request, exception=None):
    if wants_json(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if wants_json(request):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return defaults.server_error(request)


def bad_request(request, exception=None):
    if isinstance(exception, TOO_LARGE):
        if wants_json(request):
            return JsonResponse({"detail": "The request body is too large."}, status=413)
        return render(request, "413.html", status=413)
    if wants_json(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if wants_json(request):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return defaults.permission_denied(request, exception)
