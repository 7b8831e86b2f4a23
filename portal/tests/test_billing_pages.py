"""The portal's billing pages: slot pools and add-ons bought through the local provider's hosted
checkout, the waiting page that settles once the provider confirms, the plan upgrade from Free, the
payment history with receipts, the expired and declined partner pages, and tenant isolation."""
import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from billing.models import LocalCheckout, Payment, Purchase, Subscription
from billing.providers.local import LocalProvider
from billing.services.events import purchase_sync
from billing.services.partners import pool_purchase_start
from mailcore.partners.models import HostingPartner, MailboxSlot
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db

BILLING = "/portal/billing/"
PLAN = "/portal/billing/plan/"
SLOTS = "/portal/billing/slots/"
ADDONS = "/portal/billing/add-ons/"
RETURN = "/portal/billing/return/"
HTMX = {"HTTP_HX_REQUEST": "true"}
RETURN_URL = "http://testserver/portal/billing/return/"


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def charlie_client(charlie):
    client = Client()
    client.force_login(charlie)
    return client


@pytest.fixture
def buyer():
    """The person on the provider's page: no session of ours (the hosted checkout needs none)."""
    return Client()


@pytest.fixture
def pay(buyer, django_capture_on_commit_callbacks):
    """Press a button on the hosted checkout, delivering the provider's event as the commit does."""

    def press(checkout_url: str, outcome: str = "paid"):
        with django_capture_on_commit_callbacks(execute=True):
            return buyer.post(urlsplit(checkout_url).path, {"outcome": outcome})

    return press


def html(response) -> str:
    return response.content.decode()


def field_errors(page: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', page, re.DOTALL)
    return found.group(1) if found else ""


def waiting_page(reference: str) -> str:
    return f"/portal/billing/purchases/{reference}/"


def unused_slots(partner, plan_type="pro") -> int:
    return MailboxSlot.objects.filter(partner=partner, status="unused", plan_type=plan_type).count()


def buy_slots(client, **fields):
    return client.post(SLOTS, {"plan_type": "pro", "quantity": "5", "months": "1", "payment_method": "card",
                               **fields})


# a slot pool through the local checkout


def test_a_partner_buys_five_pro_slots_through_the_hosted_checkout(alice_client, alice, partner, buyer, pay):
    response = buy_slots(alice_client)

    purchase = Purchase.objects.get(account=alice.account)
    assert response.status_code == 302
    assert response["Location"] == purchase.checkout_url
    assert purchase.checkout_url.startswith(f"{settings.PUBLIC_BASE_URL}/billing/checkout/")
    assert (purchase.kind, purchase.item, purchase.quantity, purchase.amount_minor) == ("slot_pool", "pro", 5, 1000)
    assert purchase.status == "pending" and purchase.return_url == RETURN_URL

    checkout = html(buyer.get(urlsplit(purchase.checkout_url).path))
    assert "5 Pro mailbox slots, 1 month each" in checkout
    assert '<span class="checkout__figure">$10.00</span>' in checkout and "one-off payment" in checkout
    assert "Test payment — no real money moves" in checkout
    assert re.findall(r'<button [^>]*name="outcome"[^>]*>([^<]*)</button>', checkout) == ["Pay", "Decline"]
    assert 'name="outcome" value="paid">Pay</button>' in checkout
    assert 'name="outcome" value="failed">Decline</button>' in checkout
    assert 'name="csrfmiddlewaretoken"' in checkout

    response = pay(purchase.checkout_url)
    assert response.status_code == 302
    assert response["Location"] == f"{RETURN_URL}?reference={purchase.reference}"

    response = alice_client.get(urlsplit(response["Location"]).path + f"?reference={purchase.reference}")
    assert response.status_code == 302 and response["Location"] == waiting_page(purchase.reference)
    page = html(alice_client.get(waiting_page(purchase.reference)))
    assert "Payment confirmed" in page
    assert "5 Pro slots are in your pool" in page
    assert 'href="/portal/mailboxes/new/"' in page
    assert 'hx-trigger="every 2s"' not in page
    assert unused_slots(partner) == 5


def test_paying_twice_adds_the_slots_once(alice_client, alice, partner, pay):
    buy_slots(alice_client)
    purchase = Purchase.objects.get(account=alice.account)

    first, second = pay(purchase.checkout_url), pay(purchase.checkout_url)

    assert first["Location"] == second["Location"] == f"{RETURN_URL}?reference={purchase.reference}"
    assert unused_slots(partner) == 5
    assert Payment.objects.filter(purchase=purchase).count() == 1
    assert "Payment confirmed" in html(alice_client.get(waiting_page(purchase.reference)))
    assert unused_slots(partner) == 5


def test_declining_adds_no_slots_and_the_waiting_page_says_the_payment_failed(alice_client, alice, partner, pay):
    buy_slots(alice_client)
    purchase = Purchase.objects.get(account=alice.account)

    pay(purchase.checkout_url, "failed")

    page = html(alice_client.get(waiting_page(purchase.reference)))
    assert "The payment failed" in page and "Nothing was charged" in page
    assert f'href="{SLOTS}">Try again</a>' in page
    purchase.refresh_from_db()
    assert purchase.status == "failed"
    assert MailboxSlot.objects.filter(partner=partner).count() == 0
    assert not Payment.objects.exists()


def test_the_waiting_page_polls_while_pending_and_settles_a_late_webhook_itself(alice_client, alice, partner, buyer):
    buy_slots(alice_client)
    purchase = Purchase.objects.get(account=alice.account)
    url = waiting_page(purchase.reference)

    poll = html(alice_client.get(url, HTTP_HX_TARGET="purchase-status", **HTMX))
    assert "Waiting for confirmation from the payment provider…" in poll
    assert 'hx-trigger="every 2s"' in poll and f'hx-get="{url}"' in poll
    assert "<html" not in poll

    # The buyer pays, but the provider's event never arrives (its commit callback is not run).
    buyer.post(urlsplit(purchase.checkout_url).path, {"outcome": "paid"})
    purchase.refresh_from_db()
    assert purchase.status == "pending" and unused_slots(partner) == 0

    poll = html(alice_client.get(url, HTTP_HX_TARGET="purchase-status", **HTMX))
    assert "Payment confirmed" in poll
    assert 'hx-trigger="every 2s"' not in poll
    assert unused_slots(partner) == 5
    assert Payment.objects.filter(purchase=purchase).count() == 1


def test_a_service_error_shows_next_to_its_field_and_buys_nothing(alice_client):
    response = buy_slots(alice_client, quantity="0")

    assert response.status_code == 200
    assert "A whole number from 1 to 1000." in field_errors(html(response), "quantity")
    assert "Nothing was bought" in html(response)
    assert not Purchase.objects.exists() and not LocalCheckout.objects.exists()


def test_the_total_follows_the_form(alice_client):
    response = alice_client.get(SLOTS, {"plan_type": "premium", "quantity": "4", "months": "3"},
                                HTTP_HX_TARGET="slot-total", **HTMX)

    assert "$60.00" in html(response) and "4 × $5.00 × 3 months" in html(response)
    assert "<form" not in html(response)


def test_an_htmx_purchase_sends_the_browser_to_the_checkout(alice_client, alice):
    response = alice_client.post(SLOTS, {"plan_type": "premium", "quantity": "2", "months": "1",
                                         "payment_method": "card"}, **HTMX)

    assert response["HX-Redirect"] == Purchase.objects.get(account=alice.account).checkout_url


# bank transfer


def test_bank_transfer_is_not_offered_to_a_usd_partner(alice_client):
    assert 'value="bank_transfer"' not in html(alice_client.get(SLOTS))

    response = buy_slots(alice_client, payment_method="bank_transfer")

    assert response.status_code == 200
    assert "Bank transfer is offered only to accounts billed in NGN" in field_errors(html(response), "payment_method")
    assert not Purchase.objects.exists()


def test_an_ngn_partner_pays_by_bank_transfer_with_instructions(alice_client, alice, partner, buyer, pay):
    partner.billing_currency = "ngn"
    partner.save(update_fields=["billing_currency"])
    assert 'value="bank_transfer"' in html(alice_client.get(SLOTS))

    buy_slots(alice_client, payment_method="bank_transfer")

    purchase = Purchase.objects.get(account=alice.account)
    assert purchase.payment_method == "bank_transfer" and purchase.amount_minor == 1_500_000
    checkout = html(buyer.get(urlsplit(purchase.checkout_url).path))
    assert "Mailwell Test Bank" in checkout
    assert "₦15,000.00" in checkout and "NGN" in checkout
    assert f'value="{purchase.reference}"' in checkout and "narration" in checkout
    assert re.search(r"<dt>Account number</dt><dd><span[^>]*>\d{10}</span></dd>", checkout)
    assert 'name="outcome" value="paid">I have made the transfer</button>' in checkout
    assert 'name="outcome" value="failed">Decline</button>' in checkout

    pay(purchase.checkout_url)
    assert unused_slots(partner) == 5


# who may buy slots


def test_an_expired_partner_buys_slots_and_is_active_again(client, alice, partner, pay):
    partner.status, partner.trial_ends_at = HostingPartner.Status.EXPIRED, timezone.now() - timedelta(days=3)
    partner.save(update_fields=["status", "trial_ends_at"])
    client.force_login(alice)
    ended = f"{partner.trial_ends_at:%-d %B %Y}"

    blocked = client.get("/portal/domains/")
    assert blocked.status_code == 403
    assert f"Your trial ended on {ended}; buy a slot pool to keep going." in html(blocked)
    assert f'href="{SLOTS}"' in html(blocked)
    page = client.get(SLOTS)
    assert page.status_code == 200 and f"Your trial ended on {ended}." in html(page)

    buy_slots(client)
    pay(Purchase.objects.get(account=alice.account).checkout_url)

    partner.refresh_from_db()
    assert partner.status == "active"
    assert unused_slots(partner) == 5
    assert client.get("/portal/domains/").status_code == 200


@pytest.mark.parametrize("status", ["pending", "rejected", "suspended"])
def test_a_partner_not_approved_or_suspended_cannot_buy_slots(client, charlie, status):
    hosting_partner_enable(account=charlie.account, status=status)
    client.force_login(charlie)

    response = buy_slots(client)

    assert response.status_code == 403
    assert "Mailbox slots are part of the hosting partner program" in html(response)
    assert not Purchase.objects.exists()


def test_an_account_that_is_not_a_partner_sees_the_become_a_partner_page(charlie_client):
    for url in (SLOTS, ADDONS):
        response = charlie_client.get(url)
        assert response.status_code == 403
        assert "Become a hosting partner" in html(response)


def test_a_declined_applicant_is_told_why(client, charlie):
    partner = hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.REJECTED)
    partner.decision_note = "We only work with registered hosting companies for now."
    partner.save(update_fields=["decision_note"])
    client.force_login(charlie)

    page = html(client.get("/portal/domains/"))

    assert "Your application was declined" in page
    assert "We only work with registered hosting companies for now." in page
    assert "You are a hosting partner" not in page


# add-ons


def test_two_domain_slots_raise_the_domain_limit_by_two(alice_client, alice, partner, pay):
    assert partner.domain_limit == 2
    page = html(alice_client.get(ADDONS))
    assert "$5.00 each" in page and "0 of 2" in page

    response = alice_client.post(ADDONS, {"addon_type": "domain_slot", "quantity": "2", "payment_method": "card"})

    purchase = Purchase.objects.get(account=alice.account)
    assert response["Location"] == purchase.checkout_url and purchase.amount_minor == 1000
    pay(purchase.checkout_url)
    partner.refresh_from_db()
    assert partner.domain_limit == 4
    page = html(alice_client.get(waiting_page(purchase.reference)))
    assert "Payment confirmed" in page and "Your domain limit went up by 2." in page


# the plan


def test_a_free_account_upgrades_to_pro_and_gets_a_receipt(charlie_client, charlie, buyer, pay):
    page = html(charlie_client.get(BILLING))
    assert "Upgrade to Pro" in page and "$9.00" in page and "$29.00" in page
    assert 'href="/portal/billing/" aria-current="page">Billing</a>' in page

    response = charlie_client.post(PLAN, {"plan": "pro"})

    purchase = Purchase.objects.get(account=charlie.account)
    assert response.status_code == 302 and response["Location"] == purchase.checkout_url
    assert purchase.recurring and purchase.amount_minor == 900 and purchase.return_url == RETURN_URL
    checkout = html(buyer.get(urlsplit(purchase.checkout_url).path))
    assert "$9.00" in checkout and "per month, renews monthly" in checkout

    back = pay(purchase.checkout_url)
    response = charlie_client.get(back["Location"], follow=True)

    assert "Payment confirmed" in html(response)
    assert "Your account is on the Pro plan now" in html(response)
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "pro"
    payment = Payment.objects.get(account=charlie.account)
    page = html(charlie_client.get(BILLING))
    assert payment.receipt_number in page
    assert f'href="/portal/billing/payments/{payment.pk}/receipt/"' in page
    subscription = Subscription.objects.get(account=charlie.account)
    assert f"{subscription.current_period_end:%-d %B %Y}" in page
    receipt = html(charlie_client.get(f"/portal/billing/payments/{payment.pk}/receipt/"))
    assert payment.receipt_number in receipt
    assert charlie.account.name in receipt
    assert "Mailwell Pro plan, monthly" in receipt and "$9.00" in receipt and "USD" in receipt
    assert "Local test provider" in receipt
    assert "Refunded" not in receipt


def test_an_htmx_upgrade_redirects_the_browser_to_the_checkout(charlie_client, charlie):
    response = charlie_client.post(PLAN, {"plan": "premium"}, **HTMX)

    assert response["HX-Redirect"] == Purchase.objects.get(account=charlie.account).checkout_url


def test_a_paid_plan_changes_when_the_provider_confirms_it(charlie_client, charlie, pay,
                                                           django_capture_on_commit_callbacks):
    charlie_client.post(PLAN, {"plan": "pro"})
    pay(Purchase.objects.get(account=charlie.account).checkout_url)

    with django_capture_on_commit_callbacks(execute=True):
        response = charlie_client.post(PLAN, {"plan": "premium"}, follow=True)
    assert "Requested; your plan changes when the payment provider confirms it" in html(response)
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "premium"
    assert Purchase.objects.filter(account=charlie.account).count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        charlie_client.post(PLAN, {"plan": "free"})
    response = charlie_client.get(BILLING)
    assert "cancels at the end of the period" in html(response)
    assert "Keep Premium" in html(response)
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "premium"


def test_an_htmx_plan_change_swaps_the_plans_in_place(charlie_client, charlie, pay):
    charlie_client.post(PLAN, {"plan": "pro"})
    pay(Purchase.objects.get(account=charlie.account).checkout_url)

    response = charlie_client.post(PLAN, {"plan": "premium"}, HTTP_HX_TARGET="plans", **HTMX)

    assert response.status_code == 200 and not response.has_header("HX-Redirect")
    assert html(response).startswith('<section id="plans"')
    assert 'id="plan-current"' in html(response) and 'hx-swap-oob="true"' in html(response)
    assert "Requested; your plan changes when the payment provider confirms it" in html(response)


def test_choosing_the_plan_you_are_on_changes_nothing(charlie_client, charlie):
    response = charlie_client.post(PLAN, {"plan": "free"}, follow=True)

    assert "You are on the Free plan already." in html(response)
    assert not Purchase.objects.exists()


def test_a_refunded_payment_is_marked_on_its_receipt(charlie_client, charlie, pay):
    charlie_client.post(PLAN, {"plan": "pro"})
    pay(Purchase.objects.get(account=charlie.account).checkout_url)
    payment = Payment.objects.get(account=charlie.account)
    payment.refunded_at = timezone.now()
    payment.save(update_fields=["refunded_at"])

    assert "Refunded" in html(charlie_client.get(f"/portal/billing/payments/{payment.pk}/receipt/"))
    assert '<span class="badge badge--muted">Refunded</span>' in html(charlie_client.get(BILLING))


# the hosted checkout itself


def checkout_for(return_url: str) -> LocalCheckout:
    return LocalCheckout.objects.create(token="tok_test_checkout", reference="mw_elsewhere", description="A test",
                                        amount_minor=250, currency="usd", return_url=return_url)


@pytest.mark.parametrize("return_url", ["javascript:alert(1)", "ftp://example.test/x", "//evil.test/x", ""])
def test_the_checkout_never_sends_the_buyer_to_a_non_http_address(buyer, return_url):
    checkout = checkout_for(return_url)

    response = buyer.post(f"/billing/checkout/{checkout.token}/", {"outcome": "paid"})

    assert response.status_code == 200 and not response.has_header("Location")
    assert "Payment made" in html(response) and "You can close this page." in html(response)
    assert "javascript:" not in html(response)


def test_the_checkout_returns_to_an_https_address_keeping_its_query(buyer):
    checkout = checkout_for("https://partner.example/back?order=7")

    response = buyer.post(f"/billing/checkout/{checkout.token}/", {"outcome": "failed"})

    assert response["Location"] == "https://partner.example/back?order=7&reference=mw_elsewhere"
    checkout.refresh_from_db()
    assert checkout.status == "failed"
    page = html(buyer.get(f"/billing/checkout/{checkout.token}/"))
    assert "Payment declined" in page and 'name="outcome"' not in page


def test_the_checkout_lets_its_form_redirect_to_the_return_address_only(buyer):
    checkout = checkout_for("https://partner.example/back")

    policy = buyer.get(f"/billing/checkout/{checkout.token}/")["Content-Security-Policy"]

    assert "form-action 'self' https://partner.example" in policy


def test_the_checkout_is_gone_once_no_currency_uses_the_local_provider(buyer, settings):
    checkout = checkout_for("")
    settings.PAYMENT_PROVIDERS = {"usd": "stripe", "ngn": "paystack"}

    assert buyer.post(f"/billing/checkout/{checkout.token}/", {"outcome": "paid"}).status_code == 404
    checkout.refresh_from_db()
    assert checkout.status == "open"


def test_an_unknown_checkout_is_404_and_an_unknown_outcome_400(buyer):
    assert buyer.get("/billing/checkout/nope/").status_code == 404
    checkout = checkout_for("")
    assert buyer.post(f"/billing/checkout/{checkout.token}/", {"outcome": "maybe"}).status_code == 400
    checkout.refresh_from_db()
    assert checkout.status == "open"


# tenant isolation


@pytest.fixture
def dave_purchase(db):
    """A paid purchase of another partner, dave."""
    dave = UserFactory(email="dave@example.test", account__plan_code="free")
    partner = hosting_partner_enable(account=dave.account, status=HostingPartner.Status.ACTIVE)
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN_URL)
    LocalProvider().checkout_complete(purchase.provider_ref, paid=True)
    purchase_sync(purchase)
    return purchase


def test_another_accounts_purchase_and_receipt_are_404(alice_client, dave_purchase):
    payment = Payment.objects.get(purchase=dave_purchase)

    assert alice_client.get(waiting_page(dave_purchase.reference)).status_code == 404
    assert alice_client.get(f"/portal/billing/payments/{payment.pk}/receipt/").status_code == 404
    assert alice_client.get(RETURN, {"reference": dave_purchase.reference}).status_code == 404
    assert alice_client.get(RETURN, {"reference": dave_purchase.provider_ref}).status_code == 404
    assert dave_purchase.reference not in html(alice_client.get(BILLING))


def test_the_return_page_only_ever_leads_to_a_page_of_ours(alice_client, alice):
    assert alice_client.get(RETURN)["Location"] == BILLING
    assert alice_client.get(RETURN, {"reference": "https://evil.test/"}).status_code == 404
    buy_slots(alice_client)
    purchase = Purchase.objects.get(account=alice.account)
    assert alice_client.get(RETURN)["Location"] == waiting_page(purchase.reference)


def test_the_billing_pages_need_a_login(client):
    for url in (BILLING, SLOTS, ADDONS, RETURN, waiting_page("mw_x"), "/portal/billing/payments/1/receipt/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


# a provider that does not answer


@pytest.fixture
def stripe_down(settings):
    """Stripe takes USD, at an address where nothing listens."""
    settings.PAYMENT_PROVIDERS = {"usd": "stripe", "ngn": "local"}
    settings.STRIPE_API_BASE = "http://127.0.0.1:9"
    settings.STRIPE_API_KEY = "sk_test_x"
    settings.STRIPE_WEBHOOK_SECRET = "whsec_x"


def test_a_provider_that_does_not_answer_is_a_502_and_nothing_is_created(alice_client, partner, stripe_down):
    response = buy_slots(alice_client)

    assert response.status_code == 502
    assert "The payment provider did not answer; nothing was charged. Try again in a minute." in html(response)
    assert 'role="alert"' in html(response)
    assert not Purchase.objects.exists() and not LocalCheckout.objects.exists()
    assert MailboxSlot.objects.filter(partner=partner).count() == 0


def test_an_upgrade_the_provider_does_not_answer_is_a_502_and_leaves_the_plan(charlie_client, charlie, stripe_down):
    response = charlie_client.post(PLAN, {"plan": "pro"})

    assert response.status_code == 502
    assert "The payment provider did not answer; nothing was charged." in html(response)
    assert not Purchase.objects.exists()
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free"


def test_the_plan_comparison_shows_webhooks_on_every_plan_for_a_working_partner(alice_client, charlie_client):
    page = html(alice_client.get(BILLING))
    assert "Not included: </span>Webhooks" not in page
    assert page.count('Included: </span>Webhooks (with your partner account)') >= 1
    assert 'Included: </span>Webhooks (with' not in html(charlie_client.get(BILLING))
    assert "Not included: </span>Webhooks" in html(charlie_client.get(BILLING))
