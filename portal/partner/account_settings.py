"""Portal settings: a hosting partner's default lapse action, and the account's API keys (create,
shown once; usage chart; revoke).

They call the same mailcore services and selectors as the JSON API (/v1/hosting/settings,
/api-keys). The lapse action is a partner setting; API keys belong to every account, partner scopes
only to partner accounts. A new key's raw value is in one response only, never cached, stored nowhere.
"""
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.apikeys.scopes import ALL_SCOPES
from mailcore.apikeys.selectors import USAGE_DAYS, api_key_get, api_key_list, api_key_usage
from mailcore.apikeys.services import api_key_create, api_key_revoke
from mailcore.errors import InvalidFields
from mailcore.partners.services import partner_settings_update
from portal.partner.forms import ApiKeyForm, LapseActionForm
from portal.access import found_or_404
from portal.htmx import regions

SETTINGS_TEMPLATE = "portal/settings.html"
API_KEY_NEW_TEMPLATE = "portal/settings_api_key_new.html"
API_KEY_TEMPLATE = "portal/settings_api_key.html"
CONFIRM_TEMPLATE = "portal/settings_confirm.html"


def api_key_page(view):
    """One of the account's API keys; another account's is 404."""

    @login_required
    @wraps(view)
    def wrapped(request, key_id: int, *args, **kwargs):
        key = found_or_404(api_key_get, "API key", account=request.user.account, key_id=key_id)
        return view(request, key, *args, **kwargs)

    return wrapped


def _operational_partner(account):
    """The hosting partner the lapse setting belongs to: in trial or active, as for the hosting API."""
    partner = getattr(account, "partner", None)
    return partner if partner is not None and partner.is_operational else None


def _settings_context(account, lapse_form=None) -> dict:
    partner = _operational_partner(account)
    if partner is not None and lapse_form is None:
        lapse_form = LapseActionForm(initial={"default_client_lapse_action": partner.default_client_lapse_action})
    return {"partner": partner, "lapse_form": lapse_form, "api_keys": list(api_key_list(account=account)),
            "scope_names": ALL_SCOPES}


@require_GET
@login_required
def settings_page(request):
    return render(request, SETTINGS_TEMPLATE, _settings_context(request.user.account))


@require_POST
@login_required
def lapse_action(request):
    """What happens to a client's mailbox when its term ends, unless the client overrides it."""
    account = request.user.account
    partner = _operational_partner(account)
    if partner is None:
        raise Http404("Only hosting partners have a lapse action.")
    form = LapseActionForm(request.POST)
    if form.is_valid():
        try:
            partner_settings_update(partner=partner, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        else:
            label = dict(form.fields["default_client_lapse_action"].choices)[partner.default_client_lapse_action]
            messages.success(request, f"Saved. Lapsed mailboxes now follow “{label}”, unless their client says "
                                      "otherwise.")
            form = None
    if request.htmx:
        return regions(request, SETTINGS_TEMPLATE, ["lapse-action"], _settings_context(account, form))
    if form is None:
        return redirect(f"{reverse('portal:settings')}#lapse-action")
    return render(request, SETTINGS_TEMPLATE, _settings_context(account, form))


# API keys


@require_http_methods(["GET", "POST"])
@login_required
def api_key_new(request):
    """The create form; a created key's raw value is shown in this answer only."""
    account = request.user.account
    form = ApiKeyForm(request.POST if request.method == "POST" else None, for_partner=hasattr(account, "partner"))
    created, raw = None, ""
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                created, raw = api_key_create(
                    account=account, created_by=request.user, name=data["name"], scopes=data["scopes"],
                    expires_at=form.expires_at(timezone.now()), allowed_ips=data["allowed_ips"] or None,
                    blocked_ips=data["blocked_ips"] or None)
            except InvalidFields as exc:
                form.add_service_error(exc)
        if created:
            messages.success(request, f"API key “{created.name}” created. Copy it now: it is shown only once.")
        else:
            messages.error(request, "The key was not created: see the fields marked below.")
    context = {"form": form, "created": created, "raw_key": raw, "scope_names": ALL_SCOPES}
    if request.htmx and request.method == "POST":
        response = regions(request, API_KEY_NEW_TEMPLATE, ["api-key-form"], context)
    else:
        response = render(request, API_KEY_NEW_TEMPLATE, context)
    if raw:
        add_never_cache_headers(response)
    return response


@require_GET
@api_key_page
def api_key_detail(request, key):
    """The key's settings and its requests over the last 30 days, as bars."""
    usage = api_key_usage(key=key)
    peak = max(day["count"] for day in usage["daily"])
    return render(request, API_KEY_TEMPLATE, {"key": key, "usage": usage, "peak": peak, "days": USAGE_DAYS,
                                              "scope_names": ALL_SCOPES})


@require_http_methods(["GET", "POST"])
@api_key_page
def api_key_revoke_view(request, key):
    """GET asks for confirmation (without JavaScript); POST revokes for good."""
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"key": key})
    api_key_revoke(key=key)
    messages.success(request, f"API key “{key.name}” revoked. Requests made with it are refused from now on.")
    url = f"{reverse('portal:settings')}#api-keys"
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
