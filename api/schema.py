"""OpenAPI descriptions of our three authentication schemes (drf-spectacular extensions)."""
import re

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


# --- the error responses and request constraints every operation states (a postprocessing hook) ---

ERROR = {"type": "object", "required": ["detail"], "properties": {"detail": {"type": "string"}}}
VALIDATION_ERROR = {
    "type": "object", "required": ["detail", "errors"],
    "properties": {"detail": {"type": "string"},
                   "errors": {"type": "object", "description": "Messages per field (nested for nested fields)."}},
}
NO_NUL = "^[^\\u0000]*$"  # what every text field accepts (DRF refuses NUL characters)
# ... and what one that may not be blank accepts: DRF strips surrounding white space first.
NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000\\u001c-\\u001f\\u0085][^\\u0000]*$"
_CLASS_ONLY = re.compile(r"\^\[\^([^\]]*)\]\*\$")  # ^[^...]*$: a field's own character-class pattern


def _not_blank(pattern: str) -> str:
    """`^[^C]*$` that may not be blank either: one character outside C that is no white space, with
    any of C's around it. Said without a lookahead, which generators of examples (Hypothesis's
    from_regex) cannot read and would satisfy by drawing and discarding strings for minutes."""
    excluded = _CLASS_ONLY.fullmatch(pattern)[1]
    return f"^[^{excluded}]*[^{excluded}\\s\\u0000\\u001c-\\u001f\\u0085][^{excluded}]*$"


def _error(description: str, schema: str = "Error") -> dict:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}


def _errors_of(operation: dict, path: str, secured: bool) -> dict:
    """The client errors an operation can answer, each with the API's one error shape."""
    responses = {}
    has_input = "requestBody" in operation or any(p["in"] == "query" for p in operation.get("parameters", []))
    if secured:
        responses["401"] = _error("No credentials, or credentials that are not valid here.")
        responses["403"] = _error("The credentials lack the scope, plan or role this needs.")
    if "{" in path:
        responses["404"] = _error("Nothing with this id in your account (another account's object is not found either).")
    if has_input:
        responses["422"] = _error("A value is missing or not acceptable; `errors` says which, per field.",
                                  "ValidationError")
    if secured:
        responses["429"] = _error("Too many requests or over a quota; Retry-After says when to try again.")
    responses["4XX"] = _error("Any other client error (400 malformed JSON, 402, 409 conflict, 413 too large, "
                              "415 media type), always as {\"detail\": ...}.")
    return responses


def _strict(schema: dict) -> None:
    """A request body's object accepts only its own fields, and no text field accepts NUL."""
    if schema.get("type") == "object" and "properties" in schema:
        schema.setdefault("additionalProperties", False)
    children = list(schema.get("properties", {}).values()) + ([schema["items"]] if "items" in schema else [])
    for child in children:
        if isinstance(child, dict):
            _strict(child)
    if schema.get("type") == "string" and not {"format", "enum", "pattern"} & set(schema):
        schema["pattern"] = NOT_BLANK if schema.get("minLength", 0) >= 1 else NO_NUL
    elif schema.get("type") == "string" and schema.get("minLength", 0) >= 1 \
            and _CLASS_ONLY.fullmatch(schema.get("pattern", "")):  # a character-class pattern (one_line)
        schema["pattern"] = _not_blank(schema["pattern"])
    if "pattern" in schema and schema.get("format") == "uri":
        del schema["format"]  # the pattern is what the API checks; "uri" admits what it refuses and the reverse


def error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: each operation lists its error responses (the API's
    {"detail"} shape, 422 with `errors`), and request bodies state what the strict inputs enforce
    (no unknown fields, no NUL characters), so a generated valid request is an accepted one."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"], schemas["ValidationError"] = ERROR, VALIDATION_ERROR
    default_security = result.get("security")
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            secured = any(requirement for requirement in operation.get("security", default_security or [{}]))
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and not parameter.get("required"):
                    parameter["allowEmptyValue"] = True  # ?status= is the same as no status (DRF's reading)
                if parameter["in"] == "query":
                    _strict(parameter.get("schema", {}))
            for code, response in _errors_of(operation, path, secured).items():
                operation["responses"].setdefault(code, response)
    for name, schema in schemas.items():
        if name.endswith("Request") and not name.startswith("JsonRpc"):  # JSON-RPC allows other members
            _strict(schema)
    return result


def doc_excludes() -> list[type]:
    """drf-spectacular's own list, plus our base classes whose docstrings explain the code to its
    readers: a serializer without a docstring of its own must not publish its base's in the schema."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from api.inputs import ReusedFields, StrictInput
    from api.serializers import WithFrom
    return [*get_lib_doc_excludes(), StrictInput, ReusedFields, WithFrom]
