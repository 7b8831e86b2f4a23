"""OpenAPI descriptions of our three authentication schemes (drf-spectacular extensions)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-API-Key",
                "description": "An API key from POST /api-keys; each endpoint names the scope it needs."}


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.BearerTokenAuthentication"
    name = "SessionToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A session token from POST /auth/login."}


class CookieScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.CsrfSessionAuthentication"
    name = "PortalCookie"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "The portal's login cookie; unsafe methods need the X-CSRFToken header."}


class ApiKeyNotAcceptedScheme(OpenApiAuthenticationExtension):
    """Not a way in: it only explains the 401 an API key gets on a session-only endpoint."""

    target_class = "api.authentication.ApiKeyNotAccepted"
    name: list[str] = []

    def get_security_requirement(self, auto_schema):
        return []

    def get_security_definition(self, auto_schema):
        return []
