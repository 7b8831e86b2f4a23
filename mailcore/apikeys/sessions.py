"""Session tokens for the JSON API: password login with throttling, bearer checks, logout. A token
is bound to the password it was issued under, as Django binds the portal's sessions: a password
changed or reset by any path (allauth's pages, the operator console, manage.py) ends every token."""
from datetime import datetime

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import authenticate
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from mailcore.accounts.models import User
from mailcore.apikeys.models import SessionToken
from mailcore.apikeys.services import CredentialRejected
from mailcore.credentials import credential_new, digest_matches, prefix_of
from mailcore.errors import ErrorCode
from mailcore.throttle import ACCOUNT_LOGIN, throttle_attempt, throttle_forgive, throttle_keys

SESSION_TOKEN_KIND = "st"


class EmailNotVerified(CredentialRejected):
    """The password is right but the address was never verified (403: signing in again will not help)."""

    code = ErrorCode.FORBIDDEN


def session_login(*, email: str, password: str, client_ip: str) -> tuple[SessionToken, str]:
    """Check a password and issue a bearer token; repeated failures are throttled."""
    keys = throttle_keys(ACCOUNT_LOGIN, email, client_ip)
    throttle_attempt(keys)
    user = authenticate(None, username=email.strip(), password=password)
    if user is None:
        raise CredentialRejected("Wrong email or password.")
    throttle_forgive(keys)
    if (
        settings.ACCOUNT_EMAIL_VERIFICATION == "mandatory"
        and not EmailAddress.objects.filter(user=user, verified=True).exists()
    ):
        raise EmailNotVerified("Verify your email address first; we sent you a link when you signed up.")
    return session_token_issue(user=user)


def session_token_issue(*, user: User) -> tuple[SessionToken, str]:
    credential = credential_new(SESSION_TOKEN_KIND)
    token = SessionToken.objects.create(
        user=user,
        token_prefix=credential.prefix,
        token_digest=credential.digest,
        expires_at=timezone.now() + settings.SESSION_TOKEN_TTL,
        credential_stamp=user.get_session_auth_hash(),
    )
    return token, credential.raw


def session_token_authenticate(*, raw: str) -> SessionToken:
    prefix = prefix_of(raw, SESSION_TOKEN_KIND)
    token = None
    if prefix is not None:
        token = SessionToken.objects.select_related("user__account__plan").filter(token_prefix=prefix).first()
    if token is None or not digest_matches(raw, token.token_digest):
        raise CredentialRejected("Invalid session token.")
    if token.revoked_at is not None or token.expires_at <= timezone.now():
        raise CredentialRejected("This session token has expired or was revoked; log in again.")
    if not _issued_under_current_password(token):
        raise CredentialRejected("The password changed since this session token was issued; log in again.")
    if not token.user.is_active:
        raise CredentialRejected("This user is disabled.")
    return token


def _issued_under_current_password(token: SessionToken) -> bool:
    user = token.user
    return any(constant_time_compare(token.credential_stamp, stamp)
               for stamp in [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()])


def session_token_revoke(*, token: SessionToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def session_tokens_purge_expired(*, now: datetime | None = None) -> int:
    """Drop tokens that can no longer authenticate."""
    deleted, _ = SessionToken.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted
