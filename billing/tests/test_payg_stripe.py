"""Pay-as-you-go mailboxes paid through Stripe, row by row of the spec's "Partner mailbox" state
table: driven over /v1/hosting with a partner's API key, paid and renewed at a Stripe on loopback
(testkit/stripe_server.py), and changed only by its signed events POSTed to /billing/webhooks/stripe."""
from datetime import UTC, datetime, timedelta

import pytest
import stripe
import time_machine
from django.utils import timezone

from billing.models import LedgerEntry, Payment, ProviderEventRecord, Purchase, Subscription
from billing.providers.paystack_provider import PaystackProvider
from billing.providers.stripe_provider import StripeProvider
from billing.services.partners import partner_approve
from billing.services.payg import payg_abandoned_sweep
from billing.services.reconcile import billing_reconcile
from billing.services.refunds import payment_refund
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.models import Domain
from mailcore.events.models import Event
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from mailcore.timefmt import iso
from testkit.clients import new_key
from testkit.factories import make_domain
from testkit.stripe_server import StripeError

pytestmark = pytest.mark.django_db
WEBHOOK = "/billing/webhooks/stripe"
RETURN = "https://partner.example/thanks"


@pytest.fixture
def partner(alice, fake_stripe):
    approved = partner_approve(partner=hosting_partner_enable(account=alice.account, status="pending"))
    make_domain(alice.account, "acme.test")
    return approved


@pytest.fixture
def hosting(api, alice, partner):
    """The partner's API client, retail prices set: Pro $7.50 (wholesale $2), Premium $12 (wholesale $5)."""
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    for plan, amount in [("pro", 7.5), ("premium", 12)]:
        response = api.post("/v1/hosting/retail-pricing", {"plan_type": plan, "currency": "usd",
                                                           "retail_price": amount}, format="json")
        assert response.status_code == 200, response.json()
    return api


@pytest.fixture
def deliver(client, fake_stripe, django_capture_on_commit_callbacks):
    """POST a Stripe event, signed, to the webhook as Stripe would; what it does on commit runs.
    Returns the normalised kind the intake answered."""
    def post(event: dict) -> str:
        body, headers = fake_stripe.signed(event)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(WEBHOOK, data=body, content_type="application/json", headers=headers)
        assert response.status_code == 200, response.content
        return response.json()["kind"]
    return post


def create(hosting, plan="pro") -> dict:
    response = hosting.post("/v1/hosting/mailboxes", {
        "domain_id": Domain.objects.get(name="acme.test").pk, "local_part": "ann", "password": "long enough 1",
        "plan_id": plan, "funding_mode": "pay_as_you_go", "return_url": RETURN}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def session_of(mailbox_id: int) -> str:
    return Purchase.objects.get(partner_mailbox_id=mailbox_id, kind=Purchase.Kind.MAILBOX).provider_ref


def paid(hosting, fake_stripe, deliver, plan="pro") -> tuple[int, str]:
    """A mailbox whose first payment at Stripe was confirmed by its event: its id and Stripe subscription."""
    mailbox_id = create(hosting, plan)["id"]
    assert deliver(fake_stripe.checkout_pay(session_of(mailbox_id))) == "checkout.paid"
    return mailbox_id, fake_stripe.of("subscription")[0]["id"]


def state(mailbox_id: int) -> tuple[str, bool, str]:
    """The partner mailbox's status, whether its account may be used, and the account's plan."""
    partner_mailbox = PartnerMailbox.objects.select_related("mailbox__plan").get(pk=mailbox_id)
    return partner_mailbox.status, partner_mailbox.mailbox.is_active, partner_mailbox.mailbox.plan.code


def ledger() -> list[tuple[str, int, str]]:
    return list(LedgerEntry.objects.order_by("id").values_list("kind", "amount_minor", "payment__provider_ref"))


def events(name: str) -> list[dict]:
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def period_end(fake_stripe, subscription_id: str) -> datetime:
    return datetime.fromtimestamp(fake_stripe.objects[subscription_id]["items"]["data"][0]["current_period_end"],
                                  tz=UTC)


def invoices(fake_stripe) -> list[str]:
    return [invoice["id"] for invoice in fake_stripe.of("invoice")]


# (none) -> pending_payment


def test_a_new_mailbox_waits_disabled_in_pending_payment_with_a_stripe_checkout(hosting, fake_stripe):
    body = create(hosting)

    [session] = fake_stripe.of("checkout.session")
    assert (body["status"], body["is_pay_as_you_go"]) == ("pending_payment", True)
    assert body["checkout_url"] == session["url"] == f"{fake_stripe.url}/c/pay/{session['id']}"
    assert state(body["id"]) == ("pending_payment", False, "pro")
    assert (session["mode"], session["amount_total"], session["currency"], session["status"]) == (
        "subscription", 750, "usd", "open")
    assert session["_private"]["subscription_data"]["metadata"]["product"] == "mailbox:pro"
    price = fake_stripe.objects[session["_private"]["lines"][0]["price"]]
    assert (price["product"], price["unit_amount"], price["recurring"]) == (
        "mw_mailbox_pro", 750, {"interval": "month", "interval_count": 1})
    product = fake_stripe.objects["mw_mailbox_pro"]
    assert (product["name"], product["metadata"]) == ("Mailwell: Pro mailbox (per month)", {"item": "mailbox:pro"})
    subscription = hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()
    assert (subscription["status"], subscription["total_price"], subscription["payment_provider"]) == (
        "pending_payment", 7.5, "stripe")
    assert ledger() == [] and events("partner_mailbox.payment_confirmed") == []


def test_a_checkout_stripe_expired_on_its_own_is_replaced_by_a_fresh_one(hosting, fake_stripe, deliver):
    body = create(hosting)
    assert deliver(fake_stripe.checkout_expire(session_of(body["id"]))) == "checkout.expired"

    fresh = hosting.get(f"/v1/hosting/mailboxes/{body['id']}").json()["checkout_url"]

    [_, session] = fake_stripe.of("checkout.session")
    assert fresh == session["url"] != body["checkout_url"] and session["status"] == "open"
    assert state(body["id"]) == ("pending_payment", False, "pro")


# pending_payment -> active (first payment)


def test_the_first_payment_activates_the_mailbox_and_credits_the_margin(hosting, fake_stripe, deliver):
    body = create(hosting)
    completed = fake_stripe.checkout_pay(session_of(body["id"]))
    assert state(body["id"]) == ("pending_payment", False, "pro")  # paid at Stripe, not yet told

    assert deliver(completed) == "checkout.paid"

    [stripe_subscription] = fake_stripe.of("subscription")
    end = period_end(fake_stripe, stripe_subscription["id"])
    assert state(body["id"]) == ("active", True, "pro")
    assert "checkout_url" not in hosting.get(f"/v1/hosting/mailboxes/{body['id']}").json()
    assert events("partner_mailbox.payment_confirmed") == [{
        "mailbox_id": body["id"], "email_address": "ann@acme.test", "domain": "acme.test",
        "client_id": Domain.objects.get(name="acme.test").client_id, "plan_type": "pro", "status": "active",
        "expires_at": iso(end), "amount": 7.5, "currency": "usd", "period_end": iso(end), "first_payment": True}]
    [first_invoice] = invoices(fake_stripe)
    assert ledger() == [("margin", 550, first_invoice)]  # $7.50 retail - $2 wholesale
    subscription = hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()
    assert (subscription["status"], subscription["payment_provider"], subscription["auto_renew"]) == (
        "active", "stripe", True)
    assert subscription["next_billing_date"] == end.date().isoformat()
    assert Subscription.objects.get().provider_ref == stripe_subscription["id"]


# active -> active (renewal)


def test_a_monthly_renewal_confirms_the_payment_again_and_credits_a_second_margin(hosting, fake_stripe, deliver):
    mailbox_id, subscription_id = paid(hosting, fake_stripe, deliver)

    assert deliver(fake_stripe.subscription_renew(subscription_id)) == "subscription.renewed"

    first_invoice, renewal_invoice = invoices(fake_stripe)
    end = period_end(fake_stripe, subscription_id)
    assert state(mailbox_id) == ("active", True, "pro")
    assert PartnerMailbox.objects.get(pk=mailbox_id).expires_at == end
    assert [(data["first_payment"], data["amount"], data["period_end"])
            for data in events("partner_mailbox.payment_confirmed")][1:] == [(False, 7.5, iso(end))]
    assert ledger() == [("margin", 550, first_invoice), ("margin", 550, renewal_invoice)]


# active -> disabled (renewal fails), and back on a successful retry


def test_a_failed_renewal_suspends_the_mailbox_and_a_later_successful_retry_re_enables_it(
        hosting, fake_stripe, deliver):
    mailbox_id, subscription_id = paid(hosting, fake_stripe, deliver)

    assert deliver(fake_stripe.subscription_renewal_fail(subscription_id)) == "subscription.renewal_failed"

    assert state(mailbox_id) == ("suspended", False, "pro")
    assert [(data["mailbox_id"], data["amount"], data["currency"]) for data in events(
        "partner_mailbox.payment_failed")] == [(mailbox_id, 7.5, "usd")]
    assert hosting.get(f"/v1/hosting/mailboxes/{mailbox_id}/subscription").json()["status"] == "past_due"
    first_invoice, failed_invoice = invoices(fake_stripe)
    assert ledger() == [("margin", 550, first_invoice)]

    assert deliver(fake_stripe.subscription_renew(subscription_id)) == "subscription.renewed"  # Stripe's retry

    assert state(mailbox_id) == ("active", True, "pro")
    assert invoices(fake_stripe) == [first_invoice, failed_invoice]  # the open invoice was paid
    assert ledger() == [("margin", 550, first_invoice), ("margin", 550, failed_invoice)]
    assert len(events("partner_mailbox.payment_confirmed")) == 2
    assert len(events("partner_mailbox.payment_failed")) == 1


# active -> expired (the client cancels)


def test_cancel_at_the_period_end_asks_stripe_and_expires_the_mailbox_when_stripe_ends_it(
        hosting, fake_stripe, deliver):
    mailbox_id, subscription_id = paid(hosting, fake_stripe, deliver)

    answer = hosting.post(f"/v1/hosting/mailboxes/{mailbox_id}/cancel-subscription", {"immediate": False},
                          format="json")

    assert answer.status_code == 200 and answer.json()["status"] == "requested"
    assert fake_stripe.requests[-1] == ("POST", f"/v1/subscriptions/{subscription_id}",
                                        {"cancel_at_period_end": "true"})
    assert deliver(fake_stripe.event_last("customer.subscription.updated")) == "subscription.updated"
    subscription = hosting.get(f"/v1/hosting/mailboxes/{mailbox_id}/subscription").json()
    assert (subscription["status"], subscription["auto_renew"], subscription["next_billing_date"]) == (
        "active", False, None)
    assert state(mailbox_id) == ("active", True, "pro")  # runs to the period end
    assert events("partner_mailbox.expired") == []

    assert deliver(fake_stripe.subscription_delete(subscription_id)) == "subscription.canceled"

    assert state(mailbox_id) == ("expired", False, "pro")
    assert [(data["mailbox_id"], data["status"]) for data in events("partner_mailbox.expired")] == [
        (mailbox_id, "expired")]
    assert Subscription.objects.get().status == "canceled"
    assert len(ledger()) == 1


def test_an_immediate_cancel_ends_the_stripe_subscription_now_and_expires_the_mailbox(hosting, fake_stripe, deliver):
    mailbox_id, subscription_id = paid(hosting, fake_stripe, deliver)

    answer = hosting.post(f"/v1/hosting/mailboxes/{mailbox_id}/cancel-subscription", {"immediate": True},
                          format="json")

    assert answer.status_code == 200
    assert fake_stripe.requests[-1] == ("DELETE", f"/v1/subscriptions/{subscription_id}", {})
    assert state(mailbox_id) == ("active", True, "pro")  # until Stripe's event
    assert deliver(fake_stripe.event_last("customer.subscription.deleted")) == "subscription.canceled"
    assert state(mailbox_id) == ("expired", False, "pro")
    assert len(events("partner_mailbox.expired")) == 1
    assert hosting.post(f"/v1/hosting/mailboxes/{mailbox_id}/cancel-subscription", {},
                        format="json").status_code == 400


# pending_payment -> deleted (7 days unpaid, or DELETE)


def test_unpaid_for_seven_days_the_mailbox_and_account_are_deleted_and_the_stripe_session_expired(
        hosting, fake_stripe, deliver, django_capture_on_commit_callbacks):
    body = create(hosting)
    session_id = session_of(body["id"])
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert payg_abandoned_sweep() == 0
    assert fake_stripe.objects[session_id]["status"] == "open"

    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)), \
            django_capture_on_commit_callbacks(execute=True):
        assert payg_abandoned_sweep() == 1

    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert [(data["mailbox_id"], data["email_address"], data["status"])
            for data in events("partner_mailbox.payment_abandoned")] == [(body["id"], "ann@acme.test", "deleted")]
    assert fake_stripe.objects[session_id]["status"] == "expired"
    assert ("POST", f"/v1/checkout/sessions/{session_id}/expire", {}) in fake_stripe.requests
    assert Purchase.objects.get().status == "expired"
    with pytest.raises(StripeError, match="no longer active"):
        fake_stripe.checkout_pay(session_id)  # the customer's tab, left open, cannot pay any more
    assert deliver(fake_stripe.event_last("checkout.session.expired")) == "checkout.expired"
    assert Payment.objects.count() == 0 and ledger() == []


def test_delete_while_pending_deletes_the_mailbox_and_account_and_expires_the_stripe_session(
        hosting, fake_stripe, django_capture_on_commit_callbacks):
    body = create(hosting)
    session_id = session_of(body["id"])

    with django_capture_on_commit_callbacks(execute=True):
        assert hosting.delete(f"/v1/hosting/mailboxes/{body['id']}").status_code == 204

    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert fake_stripe.objects[session_id]["status"] == "expired"
    assert Purchase.objects.get().status == "expired"
    assert events("partner_mailbox.deleted") == [] and events("partner_mailbox.payment_abandoned") == []
    with pytest.raises(StripeError, match="no longer active"):
        fake_stripe.checkout_pay(session_id)


def test_a_session_paid_meanwhile_is_not_expired_and_stripe_would_refuse_to(fake_stripe, hosting):
    body = create(hosting)
    session_id = session_of(body["id"])
    fake_stripe.checkout_pay(session_id)

    StripeProvider().checkout_expire(session_id)  # paid meanwhile: nothing asked of Stripe

    assert fake_stripe.objects[session_id]["status"] == "complete"
    assert fake_stripe.requests[-1][:2] == ("GET", f"/v1/checkout/sessions/{session_id}")
    with pytest.raises(stripe.InvalidRequestError, match=r'status in \["open"\] can be expired'):
        StripeProvider().client.v1.checkout.sessions.expire(session_id)


# a payment for a deleted mailbox


@pytest.mark.parametrize("how", ["paid before the delete", "Stripe down at the delete"])
def test_a_payment_that_completes_for_a_deleted_mailbox_is_refunded_and_credits_nothing(
        hosting, fake_stripe, deliver, django_capture_on_commit_callbacks, how):
    body = create(hosting)
    session_id = session_of(body["id"])
    if how == "paid before the delete":
        completed = fake_stripe.checkout_pay(session_id)  # its event is still on the way
    else:
        fake_stripe.down()
    with django_capture_on_commit_callbacks(execute=True):
        assert hosting.delete(f"/v1/hosting/mailboxes/{body['id']}").status_code == 204
    fake_stripe.up()
    if how == "Stripe down at the delete":
        assert fake_stripe.objects[session_id]["status"] == "open"  # the expiry never reached Stripe
        completed = fake_stripe.checkout_pay(session_id)

    assert deliver(completed) == "checkout.paid"

    [stripe_subscription] = fake_stripe.of("subscription")
    [charge] = fake_stripe.of("charge")
    assert [(refund["charge"], refund["amount"]) for refund in fake_stripe.of("refund")] == [(charge["id"], 750)]
    assert stripe_subscription["status"] == "canceled"  # no renewals for a mailbox that is gone
    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert ledger() == [] and events("partner_mailbox.payment_confirmed") == []
    assert not Subscription.objects.exists()

    assert deliver(fake_stripe.event_last("charge.refunded")) == "payment.refunded"
    assert deliver(fake_stripe.event_last("customer.subscription.deleted")) == "subscription.canceled"

    payment = Payment.objects.get()
    assert (payment.provider_ref, payment.amount_minor, payment.refunded_at is not None) == (
        invoices(fake_stripe)[0], 750, True)
    assert Purchase.objects.get().status == "refunded"
    assert ledger() == [] and not PartnerMailbox.objects.exists()


# upgrade


def test_an_upgrade_to_premium_changes_the_stripe_price_and_applies_only_on_its_event(
        hosting, fake_stripe, deliver):
    mailbox_id, subscription_id = paid(hosting, fake_stripe, deliver)

    answer = hosting.post(f"/v1/hosting/mailboxes/{mailbox_id}/upgrade", {"new_plan_type": "premium"},
                          format="json")

    assert answer.status_code == 200 and answer.json()["status"] == "requested"
    method, path, params = fake_stripe.requests[-1]
    assert (method, path) == ("POST", f"/v1/subscriptions/{subscription_id}")
    assert params["items"][0]["price_data"] == {"currency": "usd", "product": "mw_mailbox_premium",
                                                "unit_amount": "1200", "recurring": {"interval": "month"}}
    assert (params["proration_behavior"], params["metadata"]) == ("create_prorations", {"product": "mailbox:premium"})
    assert fake_stripe.objects["mw_mailbox_premium"]["metadata"] == {"item": "mailbox:premium"}
    assert state(mailbox_id) == ("active", True, "pro")  # until Stripe confirms
    assert hosting.get(f"/v1/hosting/mailboxes/{mailbox_id}/subscription").json()["plan_type"] == "pro"
    updated = fake_stripe.event_last("customer.subscription.updated")
    normalised = StripeProvider().webhook_parse(*fake_stripe.signed(updated))
    assert (normalised.kind, normalised.product, normalised.unit_amount_minor) == (
        "subscription.updated", "mailbox:premium", 1200)

    assert deliver(updated) == "subscription.updated"

    assert state(mailbox_id) == ("active", True, "premium")
    assert PartnerMailbox.objects.get(pk=mailbox_id).plan_type == "premium"
    subscription = Subscription.objects.get()
    assert (subscription.plan_code, subscription.amount_minor, subscription.wholesale_minor) == ("premium", 1200, 500)
    record = hosting.get(f"/v1/hosting/mailboxes/{mailbox_id}/subscription").json()
    assert (record["plan_type"], record["total_price"]) == ("premium", 12)
    assert deliver(fake_stripe.subscription_renew(subscription_id)) == "subscription.renewed"
    assert [amount for _, amount, _ in ledger()] == [550, 700]  # then $12 - $5 wholesale


def test_an_upgrade_whose_event_was_lost_is_applied_by_reconcile_once(hosting, fake_stripe, deliver):
    mailbox_id, _ = paid(hosting, fake_stripe, deliver)
    hosting.post(f"/v1/hosting/mailboxes/{mailbox_id}/upgrade", {"new_plan_type": "premium"}, format="json")

    assert billing_reconcile(days=1)["applied"] == 1  # customer.subscription.updated never arrived
    assert billing_reconcile(days=1)["applied"] == 0

    assert state(mailbox_id) == ("active", True, "premium")
    assert (Subscription.objects.get().plan_code, Subscription.objects.get().amount_minor) == ("premium", 1200)


# idempotency and refunds


def test_the_same_checkout_completed_event_delivered_twice_changes_the_ledger_once(hosting, fake_stripe, deliver):
    body = create(hosting)
    completed = fake_stripe.checkout_pay(session_of(body["id"]))
    assert deliver(completed) == "checkout.paid"
    before = (ledger(), state(body["id"]), events("partner_mailbox.payment_confirmed"),
              list(Payment.objects.values_list("provider_ref", "amount_minor")))

    assert deliver(completed) == "checkout.paid"

    assert (ledger(), state(body["id"]), events("partner_mailbox.payment_confirmed"),
            list(Payment.objects.values_list("provider_ref", "amount_minor"))) == before
    assert LedgerEntry.objects.count() == 1 and sum(amount for _, amount, _ in ledger()) == 550
    assert ProviderEventRecord.objects.filter(event_id=completed["id"]).count() == 1


def test_the_same_invoice_paid_event_delivered_twice_changes_the_ledger_once(hosting, fake_stripe, deliver):
    _, subscription_id = paid(hosting, fake_stripe, deliver)
    renewal = fake_stripe.subscription_renew(subscription_id)
    assert deliver(renewal) == "subscription.renewed"
    before = (ledger(), events("partner_mailbox.payment_confirmed"), Payment.objects.count())

    assert deliver(renewal) == "subscription.renewed"
    # Stripe's twin of invoice.paid for the same invoice, under its own event id
    assert deliver(fake_stripe.event_last("invoice.payment_succeeded")) == "subscription.renewed"

    assert (ledger(), events("partner_mailbox.payment_confirmed"), Payment.objects.count()) == before
    assert LedgerEntry.objects.count() == 2 and sum(amount for _, amount, _ in ledger()) == 1100


def test_a_refund_of_a_pay_as_you_go_payment_debits_its_margin_once(hosting, fake_stripe, deliver):
    paid(hosting, fake_stripe, deliver)
    payment = Payment.objects.get()

    payment_refund(payment=payment)  # an operator refunds it at Stripe
    refunded = fake_stripe.event_last("charge.refunded")
    assert ledger() == [("margin", 550, payment.provider_ref)]  # until Stripe's event

    assert deliver(refunded) == "payment.refunded"
    assert deliver(refunded) == "payment.refunded"

    assert ledger() == [("margin", 550, payment.provider_ref), ("refund", -550, payment.provider_ref)]
    assert sum(amount for _, amount, _ in ledger()) == 0
    payment.refresh_from_db()
    assert payment.refunded_at is not None and Purchase.objects.get().status == "refunded"


# Paystack: nothing to expire


def test_paystack_has_no_checkout_expiry_so_expiring_calls_nothing(fake_paystack):
    assert PaystackProvider().checkout_expire("mw_any_reference") is None

    assert fake_paystack.requests == []
