"""The stripe provider against a Stripe on loopback (testkit/stripe_server.py): purchases start through
the billing services, are paid at the fake Stripe, and take effect only when its signed event is
POSTed to /billing/webhooks/stripe (or `billing_reconcile` finds what a lost webhook missed)."""
import io
import time

import pytest
from django.core.management import call_command

from billing.models import BillingCustomer, Payment, ProviderEventRecord, Purchase, Subscription
from billing.providers.base import ProviderRefused, ProviderUnavailable
from billing.providers.local import LocalProvider
from billing.services.partners import addon_purchase_start, pool_purchase_start
from billing.services.plans import plan_change
from billing.services.refunds import payment_refund
from billing.services.webhooks import webhook_receive
from mailcore.events.models import Event
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import HostingPartner, MailboxSlot
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import make_mailbox

WEBHOOK = "/billing/webhooks/stripe"
RETURN_URL = "https://portal.example.test/billing/return"
DOWN = "The payment provider (Stripe) did not answer; nothing was charged. Try again in a minute."


@pytest.fixture
def partner(charlie) -> HostingPartner:
    return hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.TRIAL)


def deliver(client, fake_stripe, event: dict, **signing):
    body, headers = fake_stripe.signed(event, **signing)
    return client.post(WEBHOOK, data=body, content_type="application/json", headers=headers)


def billing_state(account) -> dict:
    """Everything a purchase or an event may change for an account, to assert that nothing did."""
    account.refresh_from_db()
    partner = HostingPartner.objects.filter(account=account).first()
    return {
        "plan": account.plan.code,
        "purchases": sorted(Purchase.objects.filter(account=account).values_list("reference", "status", "applied_at")),
        "payments": sorted(Payment.objects.filter(account=account).values_list("provider_ref", "amount_minor",
                                                                                "refunded_at")),
        "subscriptions": sorted(Subscription.objects.filter(account=account).values_list(
            "provider_ref", "plan_code", "amount_minor", "status", "current_period_end", "cancel_at_period_end")),
        "slots": MailboxSlot.objects.filter(partner__account=account).count(),
        "domain_limit": partner.domain_limit if partner else None,
        "partner_status": partner.status if partner else None,
        "events": sorted(Event.objects.filter(account=account).values_list("name", flat=True)),
    }


def pro_subscriber(client, fake_stripe, account) -> Subscription:
    """An account on Pro through a Stripe subscription whose checkout event was applied."""
    purchase = plan_change(account=account, plan_code="pro", return_url=RETURN_URL)
    assert deliver(client, fake_stripe, fake_stripe.checkout_pay(purchase.provider_ref)).status_code == 200
    return Subscription.objects.get(purchase=purchase)


# checkouts


def test_a_plan_checkout_asks_stripe_for_a_monthly_subscription_of_the_plan(fake_stripe, charlie):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)

    session = fake_stripe.objects[purchase.provider_ref]
    assert purchase.status == Purchase.Status.PENDING and purchase.provider == "stripe"
    assert purchase.checkout_url == f"{fake_stripe.url}/c/pay/{purchase.provider_ref}"
    assert (session["mode"], session["amount_total"], session["currency"]) == ("subscription", 900, "usd")
    assert (session["client_reference_id"], session["success_url"], session["cancel_url"]) == (
        purchase.reference, f"{RETURN_URL}?reference={purchase.reference}", f"{RETURN_URL}?reference={purchase.reference}")
    metadata = {"reference": purchase.reference, "account_id": str(charlie.account.pk), "kind": "plan", "item": "pro"}
    assert session["metadata"] == metadata
    assert session["_private"]["subscription_data"] == {"description": "Mailwell Pro plan, monthly",
                                                        "metadata": {**metadata, "product": "plan:pro"}}
    price = fake_stripe.objects[session["_private"]["lines"][0]["price"]]
    assert (price["product"], price["unit_amount"], price["recurring"]) == (
        "mw_plan_pro", 900, {"interval": "month", "interval_count": 1})
    customer = fake_stripe.objects[session["customer"]]
    assert (customer["email"], customer["name"], customer["metadata"]) == (
        "charlie@example.test", charlie.account.name, {"account_id": str(charlie.account.pk)})
    assert fake_stripe.objects["mw_plan_pro"]["metadata"] == {"item": "plan:pro"}
    assert charlie.account.plan.code == "free"


def test_an_account_has_one_stripe_customer_and_an_item_one_stripe_product(fake_stripe, charlie):
    first = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    second = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)

    assert len(fake_stripe.of("customer")) == 1 and len(fake_stripe.of("product")) == 1
    assert BillingCustomer.objects.get(account=charlie.account, provider="stripe").external_id == \
        fake_stripe.of("customer")[0]["id"]
    assert fake_stripe.objects[first.provider_ref]["customer"] == fake_stripe.objects[second.provider_ref]["customer"]


def test_a_pro_plan_paid_at_stripe_takes_effect_once_on_its_event(client, fake_stripe, charlie):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    event = fake_stripe.checkout_pay(purchase.provider_ref)

    response = deliver(client, fake_stripe, event)

    assert response.status_code == 200 and response.json() == {"received": True, "kind": "checkout.paid"}
    stripe_subscription = fake_stripe.of("subscription")[0]
    subscription = Subscription.objects.get(account=charlie.account)
    assert (subscription.provider_ref, subscription.plan_code, subscription.amount_minor, subscription.status) == (
        stripe_subscription["id"], "pro", 900, "active")
    assert int(subscription.current_period_end.timestamp()) == \
        stripe_subscription["items"]["data"][0]["current_period_end"]
    assert list(Payment.objects.filter(account=charlie.account).values_list("provider_ref", "amount_minor")) == [
        (fake_stripe.of("invoice")[0]["id"], 900)]
    before = billing_state(charlie.account)
    assert before["plan"] == "pro"

    replay = deliver(client, fake_stripe, event)

    assert replay.status_code == 200
    assert billing_state(charlie.account) == before
    assert ProviderEventRecord.objects.filter(provider="stripe", event_id=event["id"]).count() == 1


def test_a_slot_pool_paid_at_stripe_grants_its_slots_once(client, fake_stripe, partner):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=3, months=2, return_url=RETURN_URL)
    session = fake_stripe.objects[purchase.provider_ref]
    assert (session["mode"], session["amount_total"]) == ("payment", 1200)  # 3 slots x 2 months x $2
    completed = fake_stripe.checkout_pay(purchase.provider_ref)

    for event in [completed, completed, fake_stripe.event("checkout.session.async_payment_succeeded",
                                                          fake_stripe.objects[purchase.provider_ref])]:
        assert deliver(client, fake_stripe, event).status_code == 200

    partner.refresh_from_db()
    assert partner.status == HostingPartner.Status.ACTIVE
    assert list(MailboxSlot.objects.filter(partner=partner).values_list("plan_type", "term_days", "status")) == \
        [("pro", 60, "unused")] * 3
    intent = fake_stripe.objects[purchase.provider_ref]["payment_intent"]
    assert list(Payment.objects.filter(account=partner.account).values_list("provider_ref", "amount_minor")) == [
        (intent, 1200)]
    assert [event.data for event in Event.objects.filter(account=partner.account, name="partner_pool.purchased")] == [
        {"reference": purchase.reference, "quantity": 3, "amount": 12, "currency": "usd", "payment_provider": "stripe",
         "plan_type": "pro", "months": 2, "slots_unused": 3}]


def test_domain_slots_paid_at_stripe_grow_the_domain_limit_once(client, fake_stripe, partner):
    purchase = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=2, return_url=RETURN_URL)
    completed = fake_stripe.checkout_pay(purchase.provider_ref)

    assert deliver(client, fake_stripe, completed).status_code == 200
    assert deliver(client, fake_stripe, completed).status_code == 200

    partner.refresh_from_db()
    assert partner.domain_limit == 4
    assert [event.data for event in Event.objects.filter(account=partner.account, name="partner_addon.purchased")] == [
        {"reference": purchase.reference, "quantity": 2, "amount": 10, "currency": "usd", "payment_provider": "stripe",
         "addon_type": "domain_slot", "domain_limit": 4, "extra_storage_mb": 0}]


def test_an_expired_checkout_marks_the_purchase_expired_and_grants_nothing(client, fake_stripe, partner):
    purchase = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1, return_url=RETURN_URL)

    response = deliver(client, fake_stripe, fake_stripe.checkout_expire(purchase.provider_ref))

    assert response.json()["kind"] == "checkout.expired"
    purchase.refresh_from_db()
    partner.refresh_from_db()
    assert (purchase.status, purchase.applied_at, partner.domain_limit) == ("expired", None, 2)
    assert not Payment.objects.exists()


def test_an_event_billing_does_not_act_on_is_200_and_changes_nothing(client, fake_stripe, charlie):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    fake_stripe.checkout_pay(purchase.provider_ref)
    before = billing_state(charlie.account)

    response = deliver(client, fake_stripe, fake_stripe.event_last("customer.subscription.created"))

    assert response.status_code == 200 and response.json()["kind"] == "ignored"
    assert billing_state(charlie.account) == before


@pytest.mark.parametrize("tamper", ["missing", "wrong secret", "changed body", "stale", "malformed"])
def test_a_bad_or_missing_signature_is_400_and_changes_nothing(client, fake_stripe, charlie, tamper):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    event = fake_stripe.checkout_pay(purchase.provider_ref)
    body, headers = fake_stripe.signed(event, secret="whsec_someone_else" if tamper == "wrong secret" else None,
                                       timestamp=int(time.time()) - 600 if tamper == "stale" else None)
    if tamper == "missing":
        headers = {}
    elif tamper == "changed body":
        body = body.replace(b'"payment_status": "paid"', b'"payment_status": "paid" ')
    elif tamper == "malformed":
        headers = {"Stripe-Signature": "v1=abc"}
    before = billing_state(charlie.account)

    response = client.post(WEBHOOK, data=body, content_type="application/json", headers=headers)

    assert response.status_code == 400
    assert response.json()["detail"].startswith("Webhook signature invalid:")
    assert billing_state(charlie.account) == before and before["plan"] == "free"
    assert not ProviderEventRecord.objects.exists()


# subscriptions, and events out of order


@pytest.mark.parametrize("legacy", [False, True], ids=["current-api", "legacy-api"])
def test_a_renewal_that_arrives_before_the_checkout_event_is_applied_correctly(client, fake_stripe, charlie, legacy):
    fake_stripe.legacy = legacy
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    completed = fake_stripe.checkout_pay(purchase.provider_ref)
    subscription_id = fake_stripe.of("subscription")[0]["id"]
    renewal = fake_stripe.subscription_renew(subscription_id)

    assert deliver(client, fake_stripe, renewal).json()["kind"] == "subscription.renewed"

    first_invoice, second_invoice = (invoice["id"] for invoice in fake_stripe.of("invoice"))
    period_end = fake_stripe.objects[subscription_id]["items"]["data"][0]["current_period_end"]
    subscription = Subscription.objects.get(account=charlie.account)
    assert (subscription.status, subscription.plan_code, int(subscription.current_period_end.timestamp())) == (
        "active", "pro", period_end)
    assert sorted(Payment.objects.values_list("provider_ref", "amount_minor")) == sorted(
        [(first_invoice, 900), (second_invoice, 900)])
    before = billing_state(charlie.account)
    assert before["plan"] == "pro"

    assert deliver(client, fake_stripe, completed).status_code == 200

    assert billing_state(charlie.account) == before


def test_a_stale_subscription_update_after_a_newer_one_does_not_roll_back(client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)
    fake_stripe.subscription_renew(subscription.provider_ref)
    stale = fake_stripe.event_last("customer.subscription.updated")  # says Pro
    plan_change(account=charlie.account, plan_code="premium")
    newer = fake_stripe.event_last("customer.subscription.updated")  # says Premium

    assert deliver(client, fake_stripe, newer).status_code == 200
    assert deliver(client, fake_stripe, stale).status_code == 200

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (charlie.account.plan.code, subscription.plan_code, subscription.amount_minor) == ("premium", "premium", 2900)


def test_an_upgrade_to_premium_changes_the_stripe_price_and_applies_on_its_event(client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)

    assert plan_change(account=charlie.account, plan_code="premium") is None

    method, path, params = fake_stripe.requests[-1]
    assert (method, path) == ("POST", f"/v1/subscriptions/{subscription.provider_ref}")
    assert params["items"][0]["price_data"] == {"currency": "usd", "product": "mw_plan_premium", "unit_amount": "2900",
                                                "recurring": {"interval": "month"}}
    assert params["proration_behavior"] == "create_prorations"
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "pro"  # until Stripe confirms

    response = deliver(client, fake_stripe, fake_stripe.event_last("customer.subscription.updated"))

    assert response.json()["kind"] == "subscription.updated"
    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (charlie.account.plan.code, subscription.plan_code, subscription.amount_minor) == ("premium", "premium", 2900)


def test_a_failed_renewal_then_the_end_of_the_subscription_drops_the_account_to_free_keeping_its_data(
        client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)
    mailbox = make_mailbox(charlie.account, "box@charlie.test")

    failed = fake_stripe.subscription_renewal_fail(subscription.provider_ref)
    assert deliver(client, fake_stripe, failed).json()["kind"] == "subscription.renewal_failed"

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.status, charlie.account.plan.code) == ("past_due", "pro")

    ended = fake_stripe.subscription_delete(subscription.provider_ref)
    assert deliver(client, fake_stripe, ended).json()["kind"] == "subscription.canceled"

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.status, charlie.account.plan.code) == ("canceled", "free")
    assert Mailbox.objects.filter(pk=mailbox.pk).exists()
    assert Payment.objects.filter(account=charlie.account).count() == 1


def test_a_late_failure_notice_after_the_retry_paid_leaves_the_subscription_active(client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)
    failed = fake_stripe.subscription_renewal_fail(subscription.provider_ref)
    paid = fake_stripe.subscription_renew(subscription.provider_ref)  # the retry pays the open invoice

    assert deliver(client, fake_stripe, paid).json()["kind"] == "subscription.renewed"
    assert deliver(client, fake_stripe, failed).json()["kind"] == "ignored"

    subscription.refresh_from_db()
    assert subscription.status == "active"
    assert Payment.objects.filter(account=charlie.account).count() == 2


def test_going_back_to_free_cancels_at_the_period_end(client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)

    assert plan_change(account=charlie.account, plan_code="free") is None
    assert deliver(client, fake_stripe, fake_stripe.event_last("customer.subscription.updated")).status_code == 200

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.cancel_at_period_end, subscription.status, charlie.account.plan.code) == (True, "active", "pro")

    assert deliver(client, fake_stripe, fake_stripe.subscription_delete(subscription.provider_ref)).status_code == 200

    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free"


@pytest.mark.parametrize("legacy", [False, True], ids=["current-api", "legacy-api"])
@pytest.mark.parametrize("bought", ["plan", "domain_slot"])
def test_a_refund_at_stripe_marks_the_payment_refunded_on_its_event(client, fake_stripe, charlie, partner, bought,
                                                                   legacy):
    fake_stripe.legacy = legacy
    if bought == "plan":
        purchase = pro_subscriber(client, fake_stripe, charlie.account).purchase
    else:
        purchase = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1, return_url=RETURN_URL)
        deliver(client, fake_stripe, fake_stripe.checkout_pay(purchase.provider_ref))
    payment = Payment.objects.get(purchase=purchase)

    payment_refund(payment=payment)
    payment.refresh_from_db()
    assert payment.refunded_at is None  # until Stripe's event

    response = deliver(client, fake_stripe, fake_stripe.event_last("charge.refunded"))

    assert response.json()["kind"] == "payment.refunded"
    payment.refresh_from_db()
    purchase.refresh_from_db()
    assert payment.refunded_at is not None and purchase.status == Purchase.Status.REFUNDED
    assert [refund["amount"] for refund in fake_stripe.of("refund")] == [payment.amount_minor]


# Stripe down or refusing


@pytest.mark.parametrize("mode", ["500", "close"])
def test_when_stripe_is_down_a_checkout_is_unavailable_and_no_purchase_is_kept(fake_stripe, partner, mode):
    fake_stripe.down(mode)

    with pytest.raises(ProviderUnavailable) as raised:
        pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN_URL)

    assert raised.value.detail == DOWN
    assert not Purchase.objects.exists() and not BillingCustomer.objects.exists()
    assert not fake_stripe.of("checkout.session")


def test_a_wrong_api_key_is_refused_and_no_purchase_is_kept(fake_stripe, partner, settings):
    settings.STRIPE_API_KEY = "sk_test_wrong"

    with pytest.raises(ProviderRefused):
        pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN_URL)

    assert not Purchase.objects.exists() and not fake_stripe.objects


def test_an_event_that_arrives_while_stripe_is_down_is_not_recorded_and_applies_when_redelivered(
        client, fake_stripe, charlie):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    event = fake_stripe.checkout_pay(purchase.provider_ref)
    body, headers = fake_stripe.signed(event)
    fake_stripe.down()

    with pytest.raises(ProviderUnavailable):
        webhook_receive("stripe", body, headers)

    assert not ProviderEventRecord.objects.exists()
    fake_stripe.up()
    assert deliver(client, fake_stripe, event).json()["kind"] == "checkout.paid"
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "pro"


# billing_reconcile


def reconcile() -> str:
    out = io.StringIO()
    call_command("billing_reconcile", stdout=out)
    return out.getvalue().strip()


def test_reconcile_applies_a_checkout_paid_at_stripe_whose_webhook_never_arrived(fake_stripe, charlie):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN_URL)
    fake_stripe.checkout_pay(purchase.provider_ref)  # its event is lost

    assert reconcile() == ("billing_reconcile: 1 pending purchases checked, 1 settled; 1 subscriptions checked, "
                           "0 changes applied; 0 provider errors")

    purchase.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (purchase.status, charlie.account.plan.code) == ("paid", "pro")
    assert Subscription.objects.get(purchase=purchase).provider_ref == fake_stripe.of("subscription")[0]["id"]
    before = billing_state(charlie.account)

    assert reconcile() == ("billing_reconcile: 0 pending purchases checked, 0 settled; 1 subscriptions checked, "
                           "0 changes applied; 0 provider errors")
    assert billing_state(charlie.account) == before


def test_reconcile_settles_a_local_checkout_too(fake_stripe, charlie):
    partner = hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    partner.billing_currency = "ngn"
    partner.save()
    purchase = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1, return_url=RETURN_URL)
    assert purchase.provider == "local"
    LocalProvider().checkout_complete(purchase.provider_ref, paid=True)  # its event is delivered on commit: never

    assert reconcile().startswith("billing_reconcile: 1 pending purchases checked, 1 settled;")

    partner.refresh_from_db()
    assert partner.domain_limit == 3


def test_reconcile_applies_renewals_changes_and_ends_it_missed_once(client, fake_stripe, charlie):
    subscription = pro_subscriber(client, fake_stripe, charlie.account)
    fake_stripe.subscription_renew(subscription.provider_ref)  # events lost
    fake_stripe.objects[subscription.provider_ref]["cancel_at_period_end"] = True  # set in Stripe's dashboard

    assert reconcile().endswith("1 subscriptions checked, 2 changes applied; 0 provider errors")

    subscription.refresh_from_db()
    renewal = fake_stripe.of("invoice")[-1]
    assert int(subscription.current_period_end.timestamp()) == renewal["lines"]["data"][0]["period"]["end"]
    assert subscription.cancel_at_period_end is True
    assert Payment.objects.filter(account=charlie.account, provider_ref=renewal["id"], amount_minor=900).exists()
    before = billing_state(charlie.account)

    assert reconcile().endswith("1 subscriptions checked, 0 changes applied; 0 provider errors")
    assert billing_state(charlie.account) == before

    fake_stripe.subscription_delete(subscription.provider_ref)
    assert reconcile().endswith("1 subscriptions checked, 1 changes applied; 0 provider errors")
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free"


def test_reconcile_counts_stripe_being_down_and_changes_nothing(client, fake_stripe, charlie):
    pro_subscriber(client, fake_stripe, charlie.account)
    plan_change(account=charlie.account, plan_code="premium")
    before = billing_state(charlie.account)
    fake_stripe.down()

    assert reconcile() == ("billing_reconcile: 0 pending purchases checked, 0 settled; 1 subscriptions checked, "
                           "0 changes applied; 1 provider errors")
    assert billing_state(charlie.account) == before
