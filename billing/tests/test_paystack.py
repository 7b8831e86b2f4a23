"""NGN purchases through Paystack: slot pools, add-ons (card and bank transfer) and account plans.

Checkouts are started by the billing services, completed at a Paystack on loopback
(testkit/paystack_server.py), and its signed events are POSTed to /billing/webhooks/paystack.
"""
import json
from datetime import datetime

import pytest

from billing.models import Payment, ProviderEventRecord, Purchase, Subscription
from billing.providers.base import ProviderCannot, ProviderRefused, ProviderUnavailable
from billing.providers.paystack_provider import PaystackProvider
from billing.services.partners import addon_purchase_start, pool_purchase_start, purchase_status
from billing.services.plans import plan_change
from billing.services.refunds import payment_refund
from mailcore.events.models import Event
from mailcore.partners.models import HostingPartner, MailboxSlot
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import UserFactory
from testkit.paystack_server import Delivery

pytestmark = pytest.mark.django_db
RETURN = "https://partner.example/billing/done"
WEBHOOK = "/billing/webhooks/paystack"


@pytest.fixture
def partner(alice, fake_paystack):
    partner = hosting_partner_enable(account=alice.account)
    partner.billing_currency = HostingPartner.Currency.NGN
    partner.save(update_fields=["billing_currency"])
    return partner


def deliver(client, *deliveries: Delivery) -> list[str]:
    """POST each event as Paystack does; returns the kinds the intake answered."""
    kinds = []
    for delivery in deliveries:
        response = client.post(WEBHOOK, data=delivery.body, content_type="application/json",
                               headers=delivery.headers)
        assert response.status_code == 200, response.content
        kinds.append(response.json()["kind"])
    return kinds


def sent(fake_paystack, method: str, path: str) -> list[dict]:
    return [params for seen_method, seen_path, params in fake_paystack.requests
            if (seen_method, seen_path) == (method, path)]


def events(name: str) -> list[dict]:
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def unused_slots() -> int:
    return MailboxSlot.objects.filter(status="unused").count()


def subscribe(client, fake_paystack, account, plan_code: str = "pro") -> Subscription:
    """A paid Paystack subscription to the plan: checkout, paid, events delivered."""
    purchase = plan_change(account=account, plan_code=plan_code, return_url=RETURN, currency="ngn")
    deliver(client, *fake_paystack.pay(purchase.reference))
    return Subscription.objects.get(account=account)


# one-off purchases


def test_a_slot_pool_paid_by_card_is_granted_once_and_a_replay_changes_nothing(client, alice, partner, fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=5, return_url=RETURN)
    assert sent(fake_paystack, "POST", "/transaction/initialize") == [{
        "email": "alice@example.test", "amount": 1_500_000, "currency": "NGN", "reference": purchase.reference,
        "channels": ["card"], "callback_url": RETURN,
        "metadata": {"reference": purchase.reference, "account_id": str(alice.account.pk), "kind": "slot_pool",
                     "item": "pro"}}]
    assert (purchase.provider, purchase.provider_ref, purchase.status) == ("paystack", purchase.reference, "pending")
    assert purchase.checkout_url.startswith("https://checkout.paystack.test/")
    assert unused_slots() == 0

    [charge] = fake_paystack.pay(purchase.reference)
    assert deliver(client, charge, charge) == ["checkout.paid", "checkout.paid"]

    transaction = fake_paystack.transactions[purchase.reference]
    assert MailboxSlot.objects.filter(plan_type="pro", status="unused").count() == 5
    [pool] = events("partner_pool.purchased")
    assert pool == {"reference": purchase.reference, "quantity": 5, "amount": 15000, "currency": "ngn",
                    "payment_provider": "paystack", "plan_type": "pro", "months": 1, "slots_unused": 5}
    [payment] = Payment.objects.all()
    assert (payment.provider_ref, payment.amount_minor, payment.currency) == (str(transaction["id"]), 1_500_000, "ngn")
    assert list(ProviderEventRecord.objects.values_list("event_id", flat=True)) == [
        f"charge.success:{transaction['id']}:success"]
    purchase.refresh_from_db()
    assert purchase.status == "paid"


def test_add_ons_paid_by_card_raise_the_domain_limit_and_storage_once(client, partner, fake_paystack):
    domains = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=2, return_url=RETURN)
    storage = addon_purchase_start(partner=partner, addon_type="storage", quantity=3, return_url=RETURN)
    assert (domains.amount_minor, storage.amount_minor) == (1_000_000, 150_000)
    assert partner.domain_limit == 2

    for purchase in (domains, storage):
        [charge] = fake_paystack.pay(purchase.reference)
        deliver(client, charge, charge)

    partner.refresh_from_db()
    assert (partner.domain_limit, partner.extra_storage_mb) == (4, 3072)
    assert [(event["addon_type"], event["domain_limit"], event["extra_storage_mb"])
            for event in events("partner_addon.purchased")] == [("domain_slot", 4, 0), ("storage", 4, 3072)]
    assert Payment.objects.count() == 2


def test_a_bank_transfer_purchase_stays_pending_until_the_transfer_lands(client, partner, fake_paystack):
    purchase = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1, return_url=RETURN,
                                    payment_method="bank_transfer")
    [initialize] = sent(fake_paystack, "POST", "/transaction/initialize")
    assert initialize["channels"] == ["bank_transfer"] and purchase.payment_method == "bank_transfer"

    assert purchase_status(partner=partner, reference=purchase.reference).status == "pending"  # page not opened
    fake_paystack.transfer_started(purchase.reference)
    assert purchase_status(partner=partner, reference=purchase.reference).status == "pending"  # awaiting transfer
    partner.refresh_from_db()
    assert partner.domain_limit == 2 and not events("partner_addon.purchased") and not Payment.objects.exists()

    [charge] = fake_paystack.pay(purchase.reference)
    assert charge.event["data"]["channel"] == "bank_transfer"
    assert deliver(client, charge) == ["checkout.paid"]

    partner.refresh_from_db()
    assert partner.domain_limit == 3
    assert purchase_status(partner=partner, reference=purchase.reference).status == "paid"
    assert Payment.objects.get().amount_minor == 500_000


def test_purchase_status_settles_a_paid_transaction_whose_webhook_never_arrived(client, partner, fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="premium", quantity=2, months=3, return_url=RETURN)
    [charge] = fake_paystack.pay(purchase.reference)  # its event is lost

    assert purchase_status(partner=partner, reference=purchase.reference).status == "paid"
    assert MailboxSlot.objects.filter(plan_type="premium", status="unused", term_days=90).count() == 2
    assert len(events("partner_pool.purchased")) == 1

    assert deliver(client, charge) == ["checkout.paid"]  # it arrives after all: nothing more
    assert unused_slots() == 2 and len(events("partner_pool.purchased")) == 1 and Payment.objects.count() == 1


def test_an_unpaid_transaction_stays_pending_then_expires_once_abandoned(partner, fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN)
    assert purchase_status(partner=partner, reference=purchase.reference).status == "pending"

    fake_paystack.abandon(purchase.reference)

    assert purchase_status(partner=partner, reference=purchase.reference).status == "expired"
    assert unused_slots() == 0 and not Payment.objects.exists()


# signatures and the truth at Paystack


@pytest.mark.parametrize("forgery", ["missing", "wrong secret", "tampered body"])
def test_a_bad_or_missing_signature_is_400_and_changes_nothing(client, partner, fake_paystack, forgery):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=5, return_url=RETURN)
    [charge] = fake_paystack.pay(purchase.reference)
    body, headers = charge.body, charge.headers
    if forgery == "missing":
        headers = {}
    elif forgery == "wrong secret":
        headers = {"x-paystack-signature": fake_paystack.signature(body, secret="sk_test_someone_else")}
    else:
        body = body.replace(b'"amount": 1500000', b'"amount": 1')

    response = client.post(WEBHOOK, data=body, content_type="application/json", headers=headers)

    assert response.status_code == 400 and "signature" in response.json()["detail"]
    assert unused_slots() == 0 and not ProviderEventRecord.objects.exists() and not Payment.objects.exists()
    assert Purchase.objects.get().status == "pending"


def test_a_signed_charge_success_for_a_transaction_paystack_says_failed_changes_nothing(client, partner,
                                                                                         fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=5, return_url=RETURN)
    fake_paystack.decline(purchase.reference)
    transaction = fake_paystack.transactions[purchase.reference]
    spoof = fake_paystack.event("charge.success", {
        "id": transaction["id"], "reference": purchase.reference, "status": "success", "amount": 1_500_000,
        "currency": "NGN", "metadata": {"reference": purchase.reference}})

    assert deliver(client, spoof) == ["ignored"]

    assert unused_slots() == 0 and not Payment.objects.exists() and not events("partner_pool.purchased")
    assert Purchase.objects.get().status == "pending"
    assert purchase_status(partner=partner, reference=purchase.reference).status == "failed"  # Paystack's truth


def test_a_charge_claimed_while_the_buyer_is_still_paying_is_ignored_and_the_real_one_applied(client, partner,
                                                                                              fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=2, return_url=RETURN)
    transaction = fake_paystack.transactions[purchase.reference]
    early = fake_paystack.event("charge.success", {"id": transaction["id"], "reference": purchase.reference,
                                                   "status": "success"})

    assert deliver(client, early) == ["ignored"]
    assert deliver(client, *fake_paystack.pay(purchase.reference)) == ["checkout.paid"]  # not taken for a replay

    assert unused_slots() == 2
    assert list(ProviderEventRecord.objects.order_by("id").values_list("event_id", flat=True)) == [
        f"charge.success:{transaction['id']}:abandoned", f"charge.success:{transaction['id']}:success"]


def test_a_charge_that_cannot_be_re_checked_is_answered_503_and_applied_when_paystack_delivers_it_again(
        client, partner, fake_paystack):
    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN)
    [charge] = fake_paystack.pay(purchase.reference)
    fake_paystack.down("close", requests=1)

    response = client.post(WEBHOOK, data=charge.body, content_type="application/json", headers=charge.headers)

    assert response.status_code == 503
    assert unused_slots() == 0 and not ProviderEventRecord.objects.exists()
    assert deliver(client, charge) == ["checkout.paid"]  # Paystack retries what was not answered 200
    assert unused_slots() == 1


def test_an_event_billing_does_not_act_on_is_recorded_and_ignored(client, partner, fake_paystack):
    transfer = fake_paystack.event("transfer.success", {"id": 77, "reference": "payout_1", "status": "success"})

    assert deliver(client, transfer, transfer) == ["ignored", "ignored"]

    assert list(ProviderEventRecord.objects.values_list("event_id", "kind")) == [
        ("transfer.success:77:success", "ignored")]


# Paystack not answering, or refusing


@pytest.mark.parametrize("mode", ["500", "close"])
def test_paystack_down_during_checkout_creation_raises_and_leaves_no_purchase(partner, fake_paystack, mode):
    fake_paystack.down(mode)

    with pytest.raises(ProviderUnavailable, match=r"^The payment provider \(Paystack\) did not answer; nothing "
                                                  r"was charged\. Try again in a minute\.$"):
        pool_purchase_start(partner=partner, plan_type="pro", quantity=5, return_url=RETURN)

    assert not Purchase.objects.exists()
    fake_paystack.up()
    assert pool_purchase_start(partner=partner, plan_type="pro", quantity=5, return_url=RETURN).status == "pending"


def test_a_refusal_carries_paystacks_message_and_leaves_no_purchase(settings, partner, fake_paystack):
    settings.PAYSTACK_SECRET_KEY = "sk_test_not_ours"

    with pytest.raises(ProviderRefused, match="Invalid key"):
        addon_purchase_start(partner=partner, addon_type="storage", quantity=1, return_url=RETURN)

    assert not Purchase.objects.exists() and fake_paystack.transactions == {}


# account plans by subscription


def test_a_plan_subscription_renews_and_each_payment_is_taken_once(client, charlie, fake_paystack):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN, currency="ngn")
    [plan] = fake_paystack.plans.values()
    assert (plan["amount"], plan["interval"], plan["currency"]) == (900_000, "monthly", "NGN")
    [initialize] = sent(fake_paystack, "POST", "/transaction/initialize")
    assert (initialize["plan"], initialize["amount"], initialize["channels"]) == (plan["plan_code"], 900_000, ["card"])

    charge, created = fake_paystack.pay(purchase.reference)
    assert deliver(client, charge, created, charge) == ["checkout.paid", "ignored", "checkout.paid"]

    code = created.event["data"]["subscription_code"]
    subscription = Subscription.objects.get(account=charlie.account)
    assert (subscription.provider, subscription.provider_ref, subscription.status) == ("paystack", code, "active")
    assert subscription.current_period_end == datetime.fromisoformat(created.event["data"]["next_payment_date"])
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "pro"
    assert list(Payment.objects.values_list("provider_ref", flat=True)) == [
        str(fake_paystack.transactions[purchase.reference]["id"])]

    renewal_charge, invoice = fake_paystack.renew(code)
    assert deliver(client, invoice, renewal_charge, invoice) == [
        "subscription.renewed", "subscription.renewed", "subscription.renewed"]

    renewal = fake_paystack.transactions[renewal_charge.event["data"]["reference"]]
    subscription.refresh_from_db()
    assert subscription.current_period_end == datetime.fromisoformat(invoice.event["data"]["period_end"])
    assert subscription.status == "active"
    assert list(Payment.objects.order_by("id").values_list("provider_ref", "amount_minor", "description")) == [
        (str(fake_paystack.transactions[purchase.reference]["id"]), 900_000, "Mailwell Pro plan, monthly"),
        (str(renewal["id"]), 900_000, "Mailwell Pro plan, monthly (renewal)")]


def test_a_first_charge_before_paystack_made_the_subscription_waits_for_it(client, charlie, fake_paystack):
    purchase = plan_change(account=charlie.account, plan_code="pro", return_url=RETURN, currency="ngn")
    [charge] = fake_paystack.pay(purchase.reference, subscription_late=True)

    response = client.post(WEBHOOK, data=charge.body, content_type="application/json", headers=charge.headers)

    assert response.status_code == 503  # Paystack delivers it again
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free" and not Subscription.objects.exists()
    [created] = fake_paystack.subscription_create(purchase.reference)
    assert deliver(client, charge) == ["checkout.paid"]
    assert Subscription.objects.get().provider_ref == created.event["data"]["subscription_code"]
    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "pro"


def test_the_paystack_plan_is_made_once_per_item_and_amount(charlie, fake_paystack):
    plan_change(account=charlie.account, plan_code="pro", return_url=RETURN, currency="ngn")
    plan_change(account=UserFactory(account__plan_code="free").account, plan_code="pro", return_url=RETURN,
                currency="ngn")
    plan_change(account=UserFactory(account__plan_code="free").account, plan_code="premium", return_url=RETURN,
                currency="ngn")

    assert sorted(plan["amount"] for plan in fake_paystack.plans.values()) == [900_000, 2_900_000]
    assert len(sent(fake_paystack, "POST", "/plan")) == 2


def test_a_failed_renewal_keeps_the_plan_until_paystack_disables_the_subscription(client, charlie, fake_paystack):
    subscription = subscribe(client, fake_paystack, charlie.account)

    assert deliver(client, *fake_paystack.renewal_fail(subscription.provider_ref)) == ["subscription.renewal_failed"]

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.status, charlie.account.plan.code) == ("past_due", "pro")

    [disabled] = fake_paystack.subscription_end(subscription.provider_ref)
    assert deliver(client, disabled, disabled) == ["subscription.canceled", "subscription.canceled"]

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.status, charlie.account.plan.code) == ("canceled", "free")
    assert Payment.objects.count() == 1


def test_switching_to_free_stops_renewals_and_the_plan_ends_with_the_period(client, charlie, fake_paystack):
    subscription = subscribe(client, fake_paystack, charlie.account)
    token = fake_paystack.subscriptions[subscription.provider_ref]["email_token"]

    assert plan_change(account=charlie.account, plan_code="free") is None

    assert sent(fake_paystack, "POST", "/subscription/disable") == [{"code": subscription.provider_ref,
                                                                      "token": token}]
    not_renewing = fake_paystack.outbox[-1]
    assert not_renewing.event["event"] == "subscription.not_renew"
    assert deliver(client, not_renewing) == ["subscription.updated"]
    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.status, subscription.cancel_at_period_end, charlie.account.plan.code) == (
        "active", True, "pro")

    deliver(client, *fake_paystack.subscription_end(subscription.provider_ref))

    charlie.account.refresh_from_db()
    assert charlie.account.plan.code == "free"


def test_moving_between_paid_plans_is_refused_and_changes_nothing(client, charlie, fake_paystack):
    subscription = subscribe(client, fake_paystack, charlie.account)

    with pytest.raises(ProviderCannot, match="Paystack cannot move a running subscription"):
        plan_change(account=charlie.account, plan_code="premium")

    subscription.refresh_from_db()
    charlie.account.refresh_from_db()
    assert (subscription.plan_code, subscription.amount_minor, charlie.account.plan.code) == ("pro", 900_000, "pro")


# refunds


def test_a_refund_marks_the_payment_and_purchase_refunded_once(client, partner, fake_paystack):
    purchase = addon_purchase_start(partner=partner, addon_type="storage", quantity=2, return_url=RETURN)
    deliver(client, *fake_paystack.pay(purchase.reference))
    payment = Payment.objects.get()

    payment_refund(payment=payment)

    assert sent(fake_paystack, "POST", "/refund") == [{"transaction": payment.provider_ref}]
    refunded = fake_paystack.outbox[-1]
    assert json.loads(refunded.body)["event"] == "refund.processed"
    assert deliver(client, refunded, refunded) == ["payment.refunded", "payment.refunded"]
    payment.refresh_from_db()
    purchase.refresh_from_db()
    assert payment.refunded_at is not None and purchase.status == "refunded"
    assert ProviderEventRecord.objects.filter(kind="payment.refunded").count() == 1


def test_a_partial_refund_leaves_the_payment_and_what_it_bought(client, partner, fake_paystack):
    purchase = addon_purchase_start(partner=partner, addon_type="storage", quantity=2, return_url=RETURN)
    deliver(client, *fake_paystack.pay(purchase.reference))
    payment = Payment.objects.get()

    PaystackProvider().refund(payment.provider_ref, amount_minor=40_000)

    assert sent(fake_paystack, "POST", "/refund") == [{"transaction": payment.provider_ref, "amount": 40_000}]
    assert deliver(client, fake_paystack.outbox[-1]) == ["ignored"]
    payment.refresh_from_db()
    purchase.refresh_from_db()
    partner.refresh_from_db()
    assert (payment.refunded_at, purchase.status, partner.extra_storage_mb) == (None, "paid", 2048)
