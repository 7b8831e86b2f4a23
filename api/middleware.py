"""API clients always get JSON errors, even where Django renders its own HTML (DEBUG's 404 page)."""
from django.http import JsonResponse

from api.errors import wants_json


class JsonErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code == 404 and wants_json(request) and "json" not in response.get("Content-Type", ""):
            return JsonResponse({"detail": "Not found."}, status=404)
        return response
