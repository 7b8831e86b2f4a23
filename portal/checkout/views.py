"""The local provider's hosted checkout page. It stands where Stripe's or Paystack's page would, so
it needs no login: the unguessable token in its address is the buyer's access. Its two buttons settle
the checkout through LocalProvider.checkout_complete (which delivers the signed event), then the
buyer goes back to the checkout's return URL with ?reference= added (http and https only). It exists
only while settings name the local provider for some currency."""
import hashlib

from django.conf import settings
from django.http import Http404, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from billing.models import LocalCheckout
from billing.money import Money
from billing.providers.local import LocalProvider
from billing.selectors.local import local_checkout_get
from portal.checkout.redirects import allow_form_redirects, http_url, with_query
from portal.partner.access import found_or_404

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


@require_http_methods(["GET"])
def payment_thanks(request):
    """Where a pay-as-you-go customer lands after paying (the return URL of mailboxes made in the
    portal): it only thanks them; the mailbox turns on when the provider's event arrives."""
    return render(request, "checkout/thanks.html")
