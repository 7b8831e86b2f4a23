"""A declined payment is shown as declined, can be tried again, and the partner is told.

The customer of a pay-as-you-go mailbox presses Decline on the local provider's checkout, comes back
to the public return page, which asks the provider (never the browser's return) and says the payment
was declined, with Try again: a new checkout for the same mailbox, which they pay. The partner gets a
`payment.failed` webhook (signed, to a real HTTPS receiver on loopback) and a notice on the mailbox
and billing pages. The same for Stripe (its signed async_payment_failed event, from the Stripe on
loopback) and Paystack (which sends no event for a failed charge: its verify answer, asked by the
return page), for slot pools and for plan upgrades. Money state changes only on the provider's
verified word, and a failure is announced once however often it is re-checked."""
import re
from html import unescape

import pytest
from django.db import connections
from django.test import Client

from billing.models import Purchase
from billing.providers.local import LocalProvider
from billing.services.events import purchase_sync
from billing.services.payg import retail_price_set
from mailcore.domains.models import Domain
from mailcore.events.models import Event
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import PartnerMailbox
from mailcore.webhooks.delivery import webhooks_deliver_due
from billing.services.partners import partner_approve
from mailcore.partners.models import PartnerClient
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import login_client
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

THANKS = "/billing/thanks/"
RETRY = "/billing/thanks/retry/"


def a_partner(account, domain_name: str):
    """An approved partner (on trial, billed in USD) with a verified domain belonging to a client."""
    partner = partner_approve(partner=hosting_partner_enable(account=account, status="pending"))
    domain = make_domain(account, domain_name)
    domain.client = PartnerClient.objects.create(partner=partner, name=f"Client of {domain_name}")
    domain.save(update_fields=["client"])
    return partner


def text(response) -> str:
    """The page's words, as a reader sees them."""
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", response.content.decode(), flags=re.DOTALL)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture
def partner(alice):
    return a_partner(alice.account, "acme.test")


@pytest.fixture
def portal(alice, partner):
    return login_client(alice)


@pytest.fixture
def subscribed(receiver, alice, partner):
    """The partner's HTTPS receiver, subscribed to payment.failed."""
    created = login_client(alice).post("/webhooks", {"url": receiver.url(), "events": ["payment.failed"]},
                                       format="json")
    assert created.status_code == 201, created.json()
    receiver.secret = created.json()["secret"]
    return receiver


def delivered(receiver) -> list[dict]:
    webhooks_deliver_due()
    assert all(hit.signature_valid for hit in receiver.hits)
    return [hit.envelope for hit in receiver.hits]


def create_payg(portal, currency="usd", partner=None, price="7.50") -> PartnerMailbox:
    """ann@acme.test, made pay-as-you-go in the portal (Pro at 7.50 a month)."""
    if partner is not None:
        retail_price_set(partner=partner, plan_type="pro", currency=currency, retail_price=price)
    response = portal.post("/portal/mailboxes/new/", {
        "domain": Domain.objects.get(name="acme.test").pk, "local_part": "ann", "password": "long enough 1",
        "plan_id": "pro", "display_name": "", "funding_mode": "pay_as_you_go"})
    assert response.status_code == 302, text(response)
    return PartnerMailbox.objects.get(mailbox__address="ann@acme.test")


def press(client, checkout_url: str, outcome: str, capture):
    """The customer on the local provider's page: Pay or Decline; its signed event goes out on commit."""
    path = checkout_url.split("://", 1)[1].split("/", 1)[1]
    with capture(execute=True):
        response = client.post(f"/{path}", {"outcome": outcome})
    assert response.status_code == 302
    return response["Location"]


def test_a_declined_customer_is_told_the_truth_retries_and_pays_and_the_partner_is_told(
        client, portal, partner, subscribed, django_capture_on_commit_callbacks):
    partner_mailbox = create_payg(portal, partner=partner)
    first = partner_mailbox.purchases.get()

    # The browser's return alone changes nothing: still waiting, not "thank you, it's on".
    waiting = client.get(f"{THANKS}?reference={first.reference}")
    assert "Confirming your payment" in text(waiting) and "is on" not in text(waiting)
    assert 'hx-trigger="every 2s"' in waiting.content.decode()
    polled = client.get(f"{THANKS}?reference={first.reference}", headers={"HX-Request": "true",
                                                                          "HX-Target": "payment-status"})
    assert polled.content.decode().lstrip().startswith('<div id="payment-status"')
    assert "Confirming your payment" in text(polled) and "<html" not in polled.content.decode()

    back = press(client, first.checkout_url, "failed", django_capture_on_commit_callbacks)
    assert back.split("?")[0].endswith(THANKS) and f"reference={first.reference}" in back

    page = client.get(back)
    words = text(page)
    assert "Your payment was declined" in words and "Nothing was charged" in words
    assert "Thank you" not in words and "switches on" not in words
    assert re.search(r'<form method="post" action="/billing/thanks/retry/">', page.content.decode())
    first.refresh_from_db()
    assert first.status == Purchase.Status.FAILED
    assert not Mailbox.objects.get(address="ann@acme.test").is_active

    # Reopening the declined checkout link offers Try again (back to the page that starts a new one).
    reopened = client.get(f"/{first.checkout_url.split('://', 1)[1].split('/', 1)[1]}")
    assert "Payment declined" in text(reopened)
    assert re.search(r'<a class="btn btn--primary btn--block" href="[^"]*/billing/thanks/\?reference='
                     + first.reference + r'">Try again</a>', reopened.content.decode())

    # The partner is told: a signed webhook, and notices in the portal.
    [event] = delivered(subscribed)
    assert event["event"] == "payment.failed"
    assert {k: event["data"][k] for k in ("reference", "kind", "item", "amount", "currency", "payment_provider",
                                          "mailbox_id", "email_address")} == {
        "reference": first.reference, "kind": "mailbox", "item": "pro", "amount": 7.5, "currency": "usd",
        "payment_provider": "local", "mailbox_id": partner_mailbox.pk, "email_address": "ann@acme.test"}
    detail = text(portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/"))
    assert "Your customer's payment was declined" in detail
    billing = text(portal.get("/portal/billing/"))
    assert "Payment declined" in billing and "ann@acme.test: Pro mailbox, monthly" in billing

    # Try again: a new checkout for the same mailbox, paid this time.
    retried = client.post(RETRY, {"reference": first.reference})
    assert retried.status_code == 302
    second = partner_mailbox.purchases.exclude(pk=first.pk).get()
    assert retried["Location"] == second.checkout_url and second.status == Purchase.Status.PENDING
    assert client.post(RETRY, {"reference": first.reference})["Location"] == second.checkout_url  # not a third

    back = press(client, second.checkout_url, "paid", django_capture_on_commit_callbacks)
    confirmed = text(client.get(back))
    assert "Payment confirmed" in confirmed and "ann@acme.test is on" in confirmed
    assert Mailbox.objects.get(address="ann@acme.test").is_active
    assert "Your customer's payment was declined" not in text(portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/"))
    assert "Payment declined" not in text(portal.get("/portal/billing/"))  # paid on retry: nothing to chase
    # the old link now says its checkout is closed: nothing more to retry
    assert "This checkout is closed" in text(client.get(f"{THANKS}?reference={first.reference}"))
    assert client.post(RETRY, {"reference": first.reference})["Location"] == f"{THANKS}?reference={first.reference}"
    assert [e["event"] for e in delivered(subscribed)] == ["payment.failed"]


def test_a_failure_is_announced_once_however_often_it_is_rechecked(client, portal, partner,
                                                                  django_capture_on_commit_callbacks):
    partner_mailbox = create_payg(portal, partner=partner)
    purchase = partner_mailbox.purchases.get()
    press(client, purchase.checkout_url, "failed", django_capture_on_commit_callbacks)
    for _ in range(3):
        client.get(f"{THANKS}?reference={purchase.reference}")
        purchase_sync(purchase)
    assert LocalProvider().checkout_complete(purchase.provider_ref, paid=True) is None  # settled: no second outcome
    assert Event.objects.filter(name="payment.failed").count() == 1


def test_the_return_page_answers_unknown_references_plainly_and_retry_needs_one(client, db):
    page = client.get(f"{THANKS}?reference=mw_nothing&next=https://evil.example/")
    assert page.status_code == 200 and "We can't find this payment" in text(page)
    assert "evil.example" not in page.content.decode()
    assert client.post(RETRY, {"reference": "mw_nothing"}).status_code == 404
    assert client.get(f"{RETRY}?reference=mw_nothing").status_code == 405


def test_a_declined_slot_pool_is_shown_on_the_billing_page_with_try_again_and_announced(
        client, portal, partner, subscribed, django_capture_on_commit_callbacks):
    started = portal.post("/portal/billing/slots/", {"plan_type": "pro", "quantity": 5, "months": 1,
                                                     "payment_method": "card"})
    assert started.status_code == 302
    purchase = Purchase.objects.get(kind=Purchase.Kind.SLOT_POOL)
    back = press(client, purchase.checkout_url, "failed", django_capture_on_commit_callbacks)
    waiting = text(portal.get(back, follow=True))
    assert "The payment failed" in waiting and "Try again" in waiting
    billing = portal.get("/portal/billing/")
    assert "Payment declined" in text(billing)
    assert re.search(r'<a href="/portal/billing/slots/">Try again</a>', billing.content.decode())
    [event] = delivered(subscribed)
    assert (event["event"], event["data"]["kind"], event["data"]["quantity"]) == ("payment.failed", "slot_pool", 5)


def test_a_declined_plan_upgrade_leaves_the_plan_and_is_announced(charlie, django_capture_on_commit_callbacks):
    charlie_portal = login_client(charlie)
    started = charlie_portal.post("/portal/billing/plan/", {"plan": "pro"})
    purchase = Purchase.objects.get(kind=Purchase.Kind.PLAN)
    assert started.status_code in (200, 302)
    press(charlie_portal, purchase.checkout_url, "failed", django_capture_on_commit_callbacks)
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free"
    event = Event.objects.get(name="payment.failed")
    assert (event.account_id, event.data["kind"], event.data["item"]) == (charlie.account_id, "plan", "pro")
    assert "Payment declined" in text(charlie_portal.get("/portal/billing/"))


# Stripe and Paystack


def test_stripe_a_failed_payment_event_is_shown_to_the_customer_and_announced(
        client, alice, fake_stripe, django_capture_on_commit_callbacks):
    partner = a_partner(alice.account, "acme.test")
    portal = login_client(alice)
    partner_mailbox = create_payg(portal, partner=partner)
    purchase = partner_mailbox.purchases.get()
    assert purchase.provider == "stripe"

    event = fake_stripe.checkout_async_fail(purchase.provider_ref)
    body, headers = fake_stripe.signed(event)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/billing/webhooks/stripe", data=body, content_type="application/json", headers=headers)
    assert answer.status_code == 200 and answer.json()["kind"] == "checkout.failed"
    with django_capture_on_commit_callbacks(execute=True):  # Stripe delivers again: applied once
        assert client.post("/billing/webhooks/stripe", data=body, content_type="application/json",
                           headers=headers).status_code == 200

    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.FAILED
    assert "Your payment was declined" in text(client.get(f"{THANKS}?reference={purchase.reference}"))
    assert Event.objects.filter(name="payment.failed", data__payment_provider="stripe").count() == 1
    retried = client.post(RETRY, {"reference": purchase.reference})
    second = partner_mailbox.purchases.exclude(pk=purchase.pk).get()
    assert retried["Location"] == second.checkout_url and second.provider == "stripe"
    assert second.provider_ref != purchase.provider_ref


def test_stripe_a_forged_failure_event_changes_nothing(client, alice, fake_stripe):
    partner = a_partner(alice.account, "acme.test")
    purchase = create_payg(login_client(alice), partner=partner).purchases.get()
    body, headers = fake_stripe.signed(fake_stripe.event("checkout.session.async_payment_failed", {
        "id": purchase.provider_ref, "object": "checkout.session"}), secret="whsec_not_the_real_one")
    assert client.post("/billing/webhooks/stripe", data=body, content_type="application/json",
                       headers=headers).status_code == 400
    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.PENDING and not Event.objects.filter(name="payment.failed").exists()


def test_paystack_a_declined_charge_is_read_from_paystack_when_the_customer_returns(client, alice, fake_paystack):
    partner = a_partner(alice.account, "acme.test")
    partner.billing_currency = "ngn"
    partner.save(update_fields=["billing_currency"])
    partner_mailbox = create_payg(login_client(alice), currency="ngn", partner=partner, price="5000")
    purchase = partner_mailbox.purchases.get()
    assert purchase.provider == "paystack"

    # Paystack's callback carries its reference; nothing is believed until verify answers.
    assert "Confirming your payment" in text(client.get(f"{THANKS}?trxref={purchase.provider_ref}"
                                                        f"&reference={purchase.provider_ref}"))
    fake_paystack.decline(purchase.provider_ref)
    page = text(client.get(f"{THANKS}?trxref={purchase.provider_ref}&reference={purchase.provider_ref}"))
    assert "Your payment was declined" in page
    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.FAILED
    event = Event.objects.get(name="payment.failed")
    assert (event.data["payment_provider"], event.data["currency"], event.data["email_address"]) == (
        "paystack", "ngn", "ann@acme.test")
    retried = client.post(RETRY, {"reference": purchase.reference})
    assert retried["Location"] == partner_mailbox.purchases.exclude(pk=purchase.pk).get().checkout_url


def paystack_mailbox(alice):
    """ann@acme.test, pay-as-you-go in NGN through the Paystack on loopback, her first card declined."""
    partner = a_partner(alice.account, "acme.test")
    partner.billing_currency = "ngn"
    partner.save(update_fields=["billing_currency"])
    portal = login_client(alice)
    partner_mailbox = create_payg(portal, currency="ngn", partner=partner, price="5000")
    return portal, partner_mailbox, partner_mailbox.purchases.get()


def webhook(client, deliveries) -> None:
    for delivery in deliveries:
        response = client.post("/billing/webhooks/paystack", data=delivery.body, content_type="application/json",
                               headers=delivery.headers)
        assert response.status_code == 200, response.content


def test_paystack_the_partners_page_and_the_customers_retry_open_one_checkout_and_a_late_payment_of_the_declined_one_is_refunded(  # noqa: E501
        client, alice, fake_paystack, django_capture_on_commit_callbacks):
    portal, partner_mailbox, first = paystack_mailbox(alice)
    fake_paystack.decline(first.provider_ref)
    assert "Your payment was declined" in text(client.get(f"{THANKS}?reference={first.provider_ref}"))

    # The partner's mailbox page and the customer's Try again: one new checkout between them.
    assert portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/").status_code == 200
    retried = client.post(RETRY, {"reference": first.reference})
    second = partner_mailbox.purchases.exclude(pk=first.pk).get()
    assert retried["Location"] == second.checkout_url
    assert portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/").status_code == 200
    assert partner_mailbox.purchases.count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        webhook(client, fake_paystack.pay(second.provider_ref))
    assert Mailbox.objects.get(address="ann@acme.test").is_active

    # Paystack still lets the declined transaction be paid (another card on its page): refunded, once.
    with django_capture_on_commit_callbacks(execute=True):
        late = fake_paystack.pay(first.provider_ref)
        webhook(client, late)
        webhook(client, late)  # delivered again
    assert [refund["transaction"]["reference"] for refund in fake_paystack.refunds] == [first.provider_ref]
    partner_mailbox.refresh_from_db()
    assert partner_mailbox.status == PartnerMailbox.Status.ACTIVE
    assert partner_mailbox.subscriptions.count() == 1
    assert Event.objects.filter(name="partner_mailbox.payment_confirmed").count() == 1


def test_paystack_the_declined_checkout_paid_after_a_retry_opened_activates_and_the_retry_takes_no_second_payment(
        client, alice, fake_paystack, django_capture_on_commit_callbacks):
    portal, partner_mailbox, first = paystack_mailbox(alice)
    fake_paystack.decline(first.provider_ref)
    client.get(f"{THANKS}?reference={first.provider_ref}")
    client.post(RETRY, {"reference": first.reference})
    second = partner_mailbox.purchases.exclude(pk=first.pk).get()

    with django_capture_on_commit_callbacks(execute=True):
        webhook(client, fake_paystack.pay(first.provider_ref))
    assert Mailbox.objects.get(address="ann@acme.test").is_active
    second.refresh_from_db()
    assert second.status == Purchase.Status.EXPIRED
    assert client.post(RETRY, {"reference": second.reference})["Location"] == f"{THANKS}?reference={second.reference}"

    with django_capture_on_commit_callbacks(execute=True):
        webhook(client, fake_paystack.pay(second.provider_ref))  # the customer had it open in another tab
    assert [refund["transaction"]["reference"] for refund in fake_paystack.refunds] == [second.provider_ref]
    assert partner_mailbox.subscriptions.count() == 1
    assert Event.objects.filter(name="partner_mailbox.payment_confirmed").count() == 1


def test_a_retry_closes_the_replaced_checkout_at_the_provider_first(client, alice, fake_stripe,
                                                                   django_capture_on_commit_callbacks):
    from testkit.factories import make_domain  # noqa: F401
    partner = a_partner(alice.account, "acme.test")
    portal = login_client(alice)
    partner_mailbox = create_payg(portal, partner=partner)
    first = partner_mailbox.purchases.get()
    # Our side holds the checkout as declined while Stripe's session is still open (its page would take a card).
    Purchase.objects.filter(pk=first.pk).update(status=Purchase.Status.FAILED)

    retried = client.post(RETRY, {"reference": first.reference})

    second = partner_mailbox.purchases.exclude(pk=first.pk).get()
    assert retried["Location"] == second.checkout_url
    assert fake_stripe.objects[first.provider_ref]["status"] == "expired"
    assert fake_stripe.objects[second.provider_ref]["status"] == "open"


@pytest.mark.django_db(transaction=True)  # the customer's request runs on its own connection and commits
def test_the_partners_page_and_the_customers_retry_at_the_same_moment_open_one_checkout(plans, alice, fake_stripe):
    partner = a_partner(alice.account, "acme.test")
    portal = login_client(alice)
    partner_mailbox = create_payg(portal, partner=partner)
    first = partner_mailbox.purchases.get()
    fake_stripe.checkout_expire(first.provider_ref)  # Stripe let it expire; its event is still on the way
    customer = Client()
    retried = {}

    def handle(method, path, params, headers, _handle=fake_stripe.handle):
        """While the partner's page asks Stripe about the expired checkout, the customer presses Try again."""
        if not retried and method == "GET" and path == f"/v1/checkout/sessions/{first.provider_ref}":
            retried["location"] = None
            try:
                retried["location"] = customer.post(RETRY, {"reference": first.reference})["Location"]
            finally:
                connections.close_all()
        return _handle(method, path, params, headers)

    fake_stripe.handle = handle
    page = portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/")

    assert page.status_code == 200
    [second] = partner_mailbox.purchases.filter(status=Purchase.Status.PENDING)
    assert partner_mailbox.purchases.count() == 2
    assert retried["location"] == second.checkout_url and second.checkout_url in page.content.decode()
    assert [s["status"] for s in fake_stripe.of("checkout.session")] == ["expired", "open"]
