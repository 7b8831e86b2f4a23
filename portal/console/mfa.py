"""The console's second factor: a TOTP authenticator, and allauth's TOTP step passed in this session."""
from urllib.parse import urlencode

from allauth.account.authentication import get_authentication_records
from allauth.mfa.models import Authenticator
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse


def has_totp(user) -> bool:
    return Authenticator.objects.filter(user_id=user.pk, type=Authenticator.Type.TOTP).exists()


def passed_mfa(request: HttpRequest) -> bool:
    """allauth records each step of a sign-in in the session; "mfa" is its TOTP (or recovery code) step."""
    records = get_authentication_records(request, request.user)
    return has_totp(request.user) and any(record.get("method") == "mfa" for record in records)


def mfa_detour(request: HttpRequest, next_url: str) -> HttpResponse | None:
    """Where a signed-in staff user goes before the console, or None when nothing is missing."""
    if not has_totp(request.user):
        messages.warning(request, "The operator console needs two-factor authentication. Set up an "
                                  "authenticator app here, then open the console again.")
        return HttpResponseRedirect(reverse("mfa_activate_totp"))
    if not passed_mfa(request):
        messages.info(request, "Enter a code from your authenticator app to open the operator console.")
        return HttpResponseRedirect(f"{reverse('mfa_reauthenticate')}?{urlencode({'next': next_url})}")
    return None
