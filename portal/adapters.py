"""allauth hooks: every person who signs up gets an account of their own; mails name the product."""
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from allauth.account import app_settings as allauth_account_settings
from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.authentication import get_authentication_records
from allauth.core import context
from allauth.mfa.models import Authenticator
from django.conf import settings

from mailcore.accounts.services import account_attach_new_user
from mailcore.ipnets import client_ip
from mailcore.throttle import ACCOUNT_LOGIN, LoginThrottled, throttle_attempt, throttle_forgive, throttle_keys

# The steps of setting up a first authenticator: its QR code, then the recovery codes it made.
FIRST_SET_UP_VIEWS = {"mfa_activate_totp", "mfa_view_recovery_codes", "mfa_download_recovery_codes"}


class AccountAdapter(DefaultAccountAdapter):
    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            account_attach_new_user(user=user)
        return user

    def pre_authenticate(self, request, **credentials) -> None:
        """The portal's sign-in shares POST /auth/login's failure count (mailcore.throttle), counted
        before the password is checked; a right one takes it back (the rollback below)."""
        login = credentials.get("email") or credentials.get("username") or ""
        self._login_counters = throttle_keys(ACCOUNT_LOGIN, login,
                                             client_ip(request.META, settings.TRUSTED_PROXY_COUNT))
        try:
            throttle_attempt(self._login_counters)
        except LoginThrottled as exc:
            self._login_counters = None
            request.login_retry_after = exc.retry_after  # the sign-in page's Retry-After (portal.signin)
            raise self.validation_error("too_many_login_attempts") from None

    def _rollback_login_failed_rl_usage(self) -> None:
        counters = getattr(self, "_login_counters", None)
        if counters:
            throttle_forgive(counters)
            self._login_counters = None

    def is_reauthentication_required(self, *, app: str, **kwargs) -> bool:
        """Setting up a first authenticator right after typing the password needs no second typing
        (an operator's first sign-in asked for the password twice before it could be set up), nor
        does reading the recovery codes that set-up made. Only that step: removing an authenticator
        or regenerating recovery codes always asks again."""
        if not super().is_reauthentication_required(app=app, **kwargs):
            return False
        request = context.request
        if request is None or not request.user.is_authenticated:
            return True
        match = getattr(request, "resolver_match", None)
        if match is None or match.view_name not in FIRST_SET_UP_VIEWS:
            return True
        window = allauth_account_settings.REAUTHENTICATION_TIMEOUT
        typed = [record["at"] for record in get_authentication_records(request, request.user)
                 if record.get("method") == "password" and time.time() - record.get("at", 0) < window]
        if not typed:
            return True
        authenticators = Authenticator.objects.filter(user_id=request.user.pk)
        if match.view_name == "mfa_activate_totp":
            return authenticators.exists()
        return not authenticators.exists() or authenticators.filter(
            created_at__lt=datetime.fromtimestamp(max(typed), UTC)).exists()

    def send_mail(self, template_prefix: str, email: str, context_data: dict) -> None:
        """allauth's mails greet from the current site; without django.contrib.sites that is the
        request's host ("Hello from 127.0.0.1:8000!"), so they get the product's name instead; the
        texts that named the site by its host say its name too (templates/account/email)."""
        request = context.request
        host = request.get_host() if request is not None else ""
        super().send_mail(template_prefix, email, {"current_site": NamedSite(settings.SITE_NAME, host),
                                                   **context_data})


@dataclass(frozen=True)
class NamedSite:
    """What allauth's mail templates read of a site."""

    name: str
    domain: str
