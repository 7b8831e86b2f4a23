"""The local provider's hosted checkout page. It stands where Stripe's or Paystack's page would, so
it needs no login: the unguessable token in its address is the buyer's access. Its two buttons settle
the checkout through LocalProvider.checkout_complete (which delivers the signed event), then the
buyer goes back to the checkout's return URL with ?reference= added (http and https only). It exists
only while settings name the local provider for some currency."""
import hashlib

from django.conf import settings
from django.http import Http404, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from billing.models import LocalCheckout, Purchase
from billing.money import Money
from billing.providers.base import ProviderRefused, ProviderUnavailable
from billing.providers.local import LocalProvider
from billing.selectors.history import buyer_purchase_get
from billing.selectors.local import local_checkout_get
from billing.services.events import purchase_sync
from billing.services.payg import payg_checkout_retry
from portal.form_redirects import allow_form_redirects, http_url, provider_checkout_origins, with_query
from portal.access import found_or_404

TEMPLATE = "checkout/checkout.html"
OUTCOMES = {"paid": True, "failed": False}


def return_address(checkout: LocalCheckout) -> str:
    """Where the buyer goes back to, or "" when the return URL is not an http(s) address."""
    if not http_url(checkout.return_url):
        return ""
    return with_query(checkout.return_url, reference=checkout.reference)


def test_bank_account(token: str) -> str:
    """A made-up ten-digit account number, the same for the same checkout."""
    return f"{int(hashlib.sha256(token.encode()).hexdigest(), 16) % 10**10:010d}"


@require_http_methods(["GET", "POST"])
def local_checkout(request, token: str):
    if "local" not in settings.PAYMENT_PROVIDERS.values():
        raise Http404("No such checkout.")  # a checkout left from a test period must not be payable for free
    checkout = found_or_404(local_checkout_get, "checkout", token=token)
    if request.method == "POST":
        outcome = request.POST.get("outcome")
        if outcome not in OUTCOMES:
            return HttpResponseBadRequest("Choose Pay or Decline.")
        # None when it was settled already (a second click): the outcome stands, the buyer goes back all the same.
        LocalProvider().checkout_complete(token, paid=OUTCOMES[outcome])
        checkout.refresh_from_db()
        back = return_address(checkout)
        if back:
            return HttpResponseRedirect(back)
    back = return_address(checkout)
    response = render(request, TEMPLATE, {
        "checkout": checkout,
        "amount": Money(int(checkout.amount_minor), checkout.currency),
        "bank_transfer": checkout.payment_method == "bank_transfer",
        "bank_account": test_bank_account(checkout.token),
        "return_to": back,
    })
    return allow_form_redirects(response, [back])


PAYMENT_STATES = {Purchase.Status.PAID: "confirmed", Purchase.Status.PENDING: "pending",
                  Purchase.Status.FAILED: "declined", Purchase.Status.EXPIRED: "expired",
                  Purchase.Status.REFUNDED: "refunded"}


def _reference(request) -> str:
    """Ours (?reference=, what every provider's return carries) or Paystack's (?trxref=)."""
    return (request.GET.get("reference") or request.POST.get("reference") or request.GET.get("trxref") or "")[:128]


@require_http_methods(["GET"])
def payment_thanks(request):
    """Where a pay-as-you-go customer lands after the provider's page (the return URL of mailboxes
    made in the portal; public, the reference is the access). It says what the provider says, asked
    now, never what the browser's return claims: confirmed, still pending (htmx asks again every
    2 s), declined or expired (with Try again), or closed."""
    try:
        bought = buyer_purchase_get(reference=_reference(request))
    except Purchase.DoesNotExist:
        bought = None
    provider_silent = False
    if bought is not None and bought.status == Purchase.Status.PENDING:
        try:
            purchase_sync(bought)
        except (ProviderUnavailable, ProviderRefused):
            provider_silent = True
        bought.refresh_from_db()
    partner_mailbox = bought.partner_mailbox if bought is not None else None
    state = PAYMENT_STATES.get(bought.status, "unknown") if bought is not None else "unknown"
    if state in ("declined", "expired") and (partner_mailbox is None or partner_mailbox.status != "pending_payment"):
        state = "closed"  # deleted meanwhile, or paid through a later checkout: nothing to retry here
    context = {"purchase": bought, "state": state, "provider_silent": provider_silent,
               "address": partner_mailbox.mailbox.address if partner_mailbox is not None else "",
               "seller": partner_mailbox.partner.account.name if partner_mailbox is not None else "",
               "amount": Money(int(bought.amount_minor), bought.currency) if bought is not None else None}
    if request.htmx and request.htmx.target == "payment-status":
        return render(request, "checkout/thanks.html#payment-status", context)
    return allow_form_redirects(render(request, "checkout/thanks.html", context), provider_checkout_origins())


@require_http_methods(["POST"])
def payment_retry(request):
    """Try again after a declined or expired checkout: the mailbox's working checkout (a new one at
    the provider when the last has ended), for a mailbox still waiting for its first payment."""
    reference = _reference(request)
    try:
        bought = buyer_purchase_get(reference=reference)
    except Purchase.DoesNotExist:
        raise Http404("No such payment.") from None
    try:
        url = payg_checkout_retry(purchase=bought)
    except (ProviderUnavailable, ProviderRefused):
        url = None
    if not url:
        return HttpResponseRedirect(with_query(reverse("checkout-thanks"), reference=bought.reference))
    return HttpResponseRedirect(url)
