"""Portal pages for webhooks: endpoints (create, pause, rotate, test, delete) and their deliveries log.

They call the same mailcore.webhooks services and selectors as the JSON API. A request made by
htmx gets back only the region it swaps (plus the flash messages, out of band); without
JavaScript the same POST redirects, except where a secret or a test answer has to be shown once:
those render the page in place, never cached, so the secret is stored nowhere.
"""
import json
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.accounts.selectors import plan_gate_message
from mailcore.errors import InvalidFields
from mailcore.partners.selectors import account_has_feature
from mailcore.throttle import ActionThrottled
from mailcore.webhooks.delivery import AttemptResult, envelope_body
from mailcore.events.models import WebhookDelivery, WebhookEndpoint
from mailcore.webhooks.selectors import delivery_get, delivery_list, endpoint_get, endpoint_list
from mailcore.webhooks.services import (
    MAX_ENDPOINTS,
    DeliveryNotRetryable,
    delivery_replay,
    delivery_retry,
    endpoint_create,
    endpoint_delete,
    endpoint_rotate_secret,
    endpoint_test,
    endpoint_update,
)
from portal.access import found_or_404
from portal.partner.forms import WebhookEndpointActiveForm, WebhookEndpointForm
from portal.htmx import regions

FEATURE = "webhooks"
LIST_TEMPLATE = "portal/webhooks.html"
DETAIL_TEMPLATE = "portal/webhooks_detail.html"
CONFIRM_TEMPLATE = "portal/webhooks_confirm.html"


def _upgrade_page(request) -> HttpResponse:
    if request.htmx:  # htmx does not swap a 403: send the browser to the page that explains
        return HttpResponseClientRedirect(reverse("portal:webhooks"))
    return render(request, "portal/webhooks_upgrade.html", {"gate_message": plan_gate_message(FEATURE)}, status=403)


def webhooks_section(view):
    """Signed in, with webhooks (a plan with them, or a working partner); others see the upgrade page."""

    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not account_has_feature(account=request.user.account, feature=FEATURE):
            return _upgrade_page(request)
        return view(request, *args, **kwargs)

    return wrapped


def endpoint_page(view):
    """As webhooks_section, for one of the account's endpoints: anyone else's is 404, whatever the plan."""

    @login_required
    @wraps(view)
    def wrapped(request, endpoint_id: int, *args, **kwargs):
        account = request.user.account
        endpoint = found_or_404(endpoint_get, "webhook endpoint", account=account, endpoint_id=endpoint_id)
        if not account_has_feature(account=account, feature=FEATURE):
            return _upgrade_page(request)
        return view(request, endpoint, *args, **kwargs)

    return wrapped


def _with_payload(delivery: WebhookDelivery) -> WebhookDelivery:
    """Attach the envelope exactly as posted, pretty-printed for reading."""
    delivery.payload_pretty = json.dumps(json.loads(envelope_body(delivery.event, delivery.endpoint)),
                                         indent=2, ensure_ascii=False)
    return delivery


def _deliveries(endpoint: WebhookEndpoint) -> list[WebhookDelivery]:
    deliveries = list(delivery_list(endpoint=endpoint))
    for delivery in deliveries:
        delivery.endpoint = endpoint
        _with_payload(delivery)
    return deliveries


def _delivery(endpoint: WebhookEndpoint, delivery_id: int) -> WebhookDelivery:
    return found_or_404(delivery_get, "delivery", endpoint=endpoint, delivery_id=delivery_id)


def _detail_context(endpoint: WebhookEndpoint, **extra) -> dict:
    return {"endpoint": endpoint, "deliveries": _deliveries(endpoint), **extra}


@require_http_methods(["GET", "POST"])
@webhooks_section
def webhooks(request):
    """The account's endpoints and the form that adds one; a new endpoint's secret is shown in the answer."""
    account = request.user.account
    form = WebhookEndpointForm(request.POST if request.method == "POST" else None)
    created, secret = None, ""
    if request.method == "POST":
        if form.is_valid():
            try:
                created, secret = endpoint_create(account=account, **form.cleaned_data)
            except InvalidFields as exc:
                form.add_error(None, ValidationError(exc.message_dict))  # each message on its field, as written
        if created:
            messages.success(request, "Endpoint created. Copy its signing secret now: it is shown only once.")
        else:
            messages.error(request, "The endpoint was not created: see the fields marked below.")
    context = {"form": form, "endpoints": list(endpoint_list(account=account)), "max_endpoints": MAX_ENDPOINTS,
               "created": created, "secret": secret}
    if request.htmx and request.method == "POST":
        response = regions(request, LIST_TEMPLATE, ["endpoint-form", "endpoints"] if created else ["endpoint-form"],
                            context)
    else:
        response = render(request, LIST_TEMPLATE, context)
    if secret:
        add_never_cache_headers(response)
    return response


@require_GET
@endpoint_page
def webhook_detail(request, endpoint):
    if request.htmx and request.htmx.target == "deliveries":  # the log's Refresh button
        return render(request, f"{DETAIL_TEMPLATE}#deliveries", _detail_context(endpoint))
    return render(request, DETAIL_TEMPLATE, _detail_context(endpoint))


@require_POST
@endpoint_page
def webhook_active(request, endpoint):
    """Pause or resume: the form says which, so a double submit does not flip it back."""
    form = WebhookEndpointActiveForm(request.POST)
    form.is_valid()  # a single optional boolean: always valid
    endpoint_update(endpoint=endpoint, is_active=form.cleaned_data["is_active"])
    if endpoint.is_active:
        messages.success(request, "Endpoint resumed: new events are delivered to it again.")
    else:
        messages.success(request, "Endpoint paused: events that happen while it is paused are not sent to it.")
    if request.htmx:
        return regions(request, DETAIL_TEMPLATE, ["endpoint-status"], {"endpoint": endpoint})
    return redirect("portal:webhook", endpoint_id=endpoint.pk)


@require_POST
@endpoint_page
def webhook_test(request, endpoint):
    """Send a sample event now and show the endpoint's answer."""
    try:
        result = endpoint_test(endpoint=endpoint)
    except ActionThrottled as exc:  # shown where the answer would be
        result = AttemptResult(ok=False, status=None, body="", error=exc.detail)
    if request.htmx:
        return regions(request, DETAIL_TEMPLATE, ["test-result"], {"endpoint": endpoint, "test_result": result})
    return render(request, DETAIL_TEMPLATE, _detail_context(endpoint, test_result=result))


@require_http_methods(["GET", "POST"])
@endpoint_page
def webhook_rotate(request, endpoint):
    """GET asks for confirmation (without JavaScript); POST rotates and shows the new secret once."""
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"endpoint": endpoint, "action": "rotate"})
    secret = endpoint_rotate_secret(endpoint=endpoint)
    messages.success(request, "Signing secret rotated. Update your receiver: the old secret signs nothing any more.")
    if request.htmx:
        response = regions(request, DETAIL_TEMPLATE, ["signing-secret"], {"endpoint": endpoint, "new_secret": secret})
    else:
        response = render(request, DETAIL_TEMPLATE, _detail_context(endpoint, new_secret=secret))
    add_never_cache_headers(response)
    return response


@require_http_methods(["GET", "POST"])
@endpoint_page
def webhook_delete(request, endpoint):
    """GET asks for confirmation (without JavaScript); POST deletes the endpoint and its deliveries log."""
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"endpoint": endpoint, "action": "delete"})
    url = endpoint.url
    endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Endpoint {url} deleted. No more events will be sent to it.")
    if request.htmx:
        return HttpResponseClientRedirect(reverse("portal:webhooks"))
    return redirect("portal:webhooks")


@require_POST
@endpoint_page
def webhook_delivery_retry(request, endpoint, delivery_id: int):
    """One fresh attempt, now; the row shows the outcome."""
    delivery = _delivery(endpoint, delivery_id)
    try:
        delivery = delivery_retry(delivery=delivery)
    except DeliveryNotRetryable as exc:
        messages.error(request, f"Delivery #{delivery.pk} was not retried: {exc}.")
        delivery = _delivery(endpoint, delivery_id)
    else:
        if delivery.status == WebhookDelivery.Status.DELIVERED:
            messages.success(request,
                             f"Delivery #{delivery.pk} retried: the endpoint answered {delivery.response_status}.")
        elif delivery.status == WebhookDelivery.Status.PENDING:
            messages.info(request, f"Delivery #{delivery.pk} is queued; it is sent once the endpoint is resumed.")
        else:
            messages.error(request, f"Delivery #{delivery.pk} retried and failed again: {delivery.last_error}.")
    if request.htmx:
        delivery.endpoint = endpoint
        return regions(request, DETAIL_TEMPLATE, ["delivery"], {"endpoint": endpoint,
                                                                 "delivery": _with_payload(delivery)})
    return redirect(f"{reverse('portal:webhook', kwargs={'endpoint_id': endpoint.pk})}#delivery-{delivery.pk}")


@require_POST
@endpoint_page
def webhook_delivery_replay(request, endpoint, delivery_id: int):
    """The same event again, as a new delivery at the top of the log."""
    original = _delivery(endpoint, delivery_id)
    replay = delivery_replay(delivery=original)
    when = "shortly" if endpoint.is_active else "once the endpoint is resumed"
    messages.success(request, f"Delivery #{original.pk} replayed as #{replay.pk}; it will be sent {when}.")
    if request.htmx:
        return regions(request, DETAIL_TEMPLATE, ["deliveries"], _detail_context(endpoint))
    return redirect(f"{reverse('portal:webhook', kwargs={'endpoint_id': endpoint.pk})}#deliveries")
