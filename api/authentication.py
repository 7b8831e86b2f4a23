"""The three ways to call the API: X-API-Key, a Bearer session token, or the portal's cookie."""
from dataclasses import dataclass

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header

from mailcore.accounts.models import Account
from mailcore.apikeys.models import ApiKey
from mailcore.apikeys.services import CredentialRejected, api_key_authenticate
from mailcore.apikeys.sessions import session_token_authenticate
from mailcore.errors import ErrorCode
from mailcore.ipnets import client_ip


def request_client_ip(request) -> str:
    return client_ip(request.META, settings.TRUSTED_PROXY_COUNT)


def credential_refused(exc: CredentialRejected) -> exceptions.APIException:
    """A refused credential as DRF's own 401 or 403 (api.exceptions.HTTP_STATUS's for its code), so
    that DRF adds the view's WWW-Authenticate challenge to the 401, or answers 403 where there is none.
    (Not through api.exceptions: DRF imports this module while its own views module is loading.)"""
    if exc.code == ErrorCode.FORBIDDEN:
        return exceptions.PermissionDenied(exc.detail)
    return exceptions.AuthenticationFailed(exc.detail)


@dataclass(frozen=True)
class KeyPrincipal:
    """The caller behind an API key: an account, not a person."""

    account: Account
    api_key: ApiKey
    is_authenticated: bool = True
    is_active: bool = True

    def __str__(self) -> str:
        return f"API key {self.api_key.key_prefix}"


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        raw = request.META.get("HTTP_X_API_KEY")
        if raw is None:
            return None
        try:
            key = api_key_authenticate(raw=raw.strip(), client_ip=request_client_ip(request))
        except CredentialRejected as exc:
            raise credential_refused(exc) from None
        return KeyPrincipal(account=key.account, api_key=key), key

    def authenticate_header(self, request):
        return 'ApiKey header="X-API-Key"'


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>` from POST /auth/login; never an API key."""

    def authenticate(self, request):
        header = get_authorization_header(request).decode("latin-1")
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        if not raw.strip():
            raise exceptions.AuthenticationFailed("The Bearer header has no token.")
        try:
            token = session_token_authenticate(raw=raw.strip())
        except CredentialRejected as exc:
            raise credential_refused(exc) from None
        return token.user, token

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class CsrfSessionAuthentication(SessionAuthentication):
    """The portal's login cookie, with Django's CSRF check on unsafe methods."""


class ApiKeyNotAccepted(BaseAuthentication):
    """Last on session-only endpoints: an API key there gets a 401 that says what to use instead."""

    def authenticate(self, request):
        if request.META.get("HTTP_X_API_KEY") is not None:
            raise exceptions.AuthenticationFailed(
                "This endpoint needs a session, not an API key: sign in with POST /auth/login and send "
                "Authorization: Bearer <token> (or use the portal).")
        return None


SESSION_ONLY = [BearerTokenAuthentication, CsrfSessionAuthentication, ApiKeyNotAccepted]
