"""Pay-as-you-go mailboxes over the API with the local provider: retail prices, creation pending
payment with a disabled account, the checkout, the subscription life cycle from signed provider
events (renewal, failed renewal and recovery, cancel), abandonment, deletion, add-ons, the ledger
and payouts, and tenant isolation."""
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from billing.models import LedgerEntry, LocalCheckout, Payment, Payout, Purchase
from billing.providers.local import LocalProvider
from billing.services.ledger import payout_decide
from billing.services.partners import partner_approve
from billing.services.payg import payg_abandoned_sweep
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.events.models import Event
from mailcore.inbound.recipients import MAILBOX_DISABLED, resolve
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import MailboxSlot, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import new_key
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db
RETURN = "https://partner.example/thanks"


@pytest.fixture
def partner(alice):
    approved = partner_approve(partner=hosting_partner_enable(account=alice.account, status="pending"))
    make_domain(alice.account, "acme.test")
    return approved


@pytest.fixture
def hosting(api, alice, partner):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    return api


def events(name):
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def set_price(hosting, plan="pro", amount=7.5, currency="usd"):
    return hosting.post("/v1/hosting/retail-pricing", {"plan_type": plan, "currency": currency,
                                                       "retail_price": amount}, format="json")


def create(hosting, local="ann", plan="pro", **extra):
    from mailcore.domains.models import Domain

    body = {"domain_id": Domain.objects.get(name="acme.test").pk, "local_part": local, "password": "long enough 1",
            "plan_id": plan, "funding_mode": "pay_as_you_go", "return_url": RETURN, **extra}
    return hosting.post("/v1/hosting/mailboxes", body, format="json")


def pay(checkout_url, capture, paid=True):
    with capture(execute=True):
        LocalProvider().checkout_complete(checkout_url.rstrip("/").rsplit("/", 1)[-1], paid=paid)


def clock(capture, *args):
    with capture(execute=True):
        call_command("billing_clock", "advance", *args)


def test_retail_prices_are_read_and_set_never_below_wholesale(hosting):
    low = set_price(hosting, amount=1.99)
    assert low.status_code == 422 and "2" in low.json()["errors"]["retail_price"][0]
    assert set_price(hosting, amount=7.5).status_code == 200
    assert set_price(hosting, plan="premium", amount=9).status_code == 200
    other = set_price(hosting, plan="premium", currency="ngn", amount=12000)  # a USD partner's customers pay in USD
    assert other.status_code == 422
    assert other.json()["errors"]["currency"] == [
        "your customers pay in your billing currency, USD: set the price in it"]
    assert hosting.get("/v1/hosting/retail-pricing").json() == [
        {**row, "updated_at": row["updated_at"]} for row in hosting.get("/v1/hosting/retail-pricing").json()]
    rows = {(row["plan_type"], row["currency"]): row for row in hosting.get("/v1/hosting/retail-pricing").json()}
    assert rows["pro", "usd"] | {"updated_at": None} == {"plan_type": "pro", "currency": "usd", "retail_price": 7.5,
                                                         "wholesale_price": 2, "margin": 5.5, "updated_at": None}
    assert rows["premium", "usd"]["margin"] == 4
    assert ("premium", "ngn") not in rows


def test_the_retail_price_scopes(api, alice, partner):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["partner:mailboxes:read"]))
    assert api.get("/v1/hosting/retail-pricing").status_code == 200
    assert set_price(api).status_code == 403


def test_without_a_retail_price_creation_is_400_and_nothing_is_created(hosting):
    response = create(hosting)
    assert response.status_code == 400 and "retail price" in response.json()["detail"]
    assert not Mailbox.objects.filter(address="ann@acme.test").exists()
    set_price(hosting)
    no_return = create(hosting, return_url=None)
    assert no_return.status_code == 422 and "return_url" in no_return.json()["errors"]


def test_a_pay_as_you_go_mailbox_waits_disabled_then_the_first_payment_enables_it(
        hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    response = create(hosting)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending_payment" and body["is_pay_as_you_go"] is True
    assert body["checkout_url"].startswith("http")
    assert Mailbox.objects.get(address="ann@acme.test").is_active is False  # no IMAP login ...
    assert resolve("ann@acme.test") is MAILBOX_DISABLED  # ... and inbound mail refused
    assert hosting.get(f"/v1/hosting/mailboxes/{body['id']}").json()["checkout_url"] == body["checkout_url"]
    assert hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()["status"] == "pending_payment"
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    detail = hosting.get(f"/v1/hosting/mailboxes/{body['id']}").json()
    assert detail["status"] == "active" and "checkout_url" not in detail
    assert Mailbox.objects.get(address="ann@acme.test").is_active is True
    assert resolve("ann@acme.test").mailbox.address == "ann@acme.test"
    [confirmed] = events("partner_mailbox.payment_confirmed")
    assert confirmed["email_address"] == "ann@acme.test" and confirmed["amount"] == 7.5
    assert confirmed["currency"] == "usd" and confirmed["first_payment"] is True
    subscription = hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()
    assert subscription["status"] == "active" and subscription["total_price"] == 7.5
    assert subscription["billing_cycle"] == "monthly" and subscription["auto_renew"] is True
    assert subscription["payment_provider"] == "local" and subscription["next_billing_date"]
    margin = LedgerEntry.objects.get()
    assert (margin.kind, margin.amount_minor, margin.currency) == ("margin", 550, "usd")


def test_renewals_failures_recovery_and_cancellation(hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    body = create(hosting).json()
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    clock(django_capture_on_commit_callbacks, "--days", "31")
    assert len(events("partner_mailbox.payment_confirmed")) == 2
    assert LedgerEntry.objects.filter(kind="margin").count() == 2
    clock(django_capture_on_commit_callbacks, "--days", "30", "--fail-renewals")
    mailbox = PartnerMailbox.objects.get(pk=body["id"])
    assert mailbox.status == "suspended" and mailbox.mailbox.is_active is False
    assert len(events("partner_mailbox.payment_failed")) == 1
    clock(django_capture_on_commit_callbacks, "--days", "3")  # the provider's retry succeeds
    mailbox.refresh_from_db()
    assert mailbox.status == "active" and Mailbox.objects.get(pk=mailbox.mailbox_id).is_active
    with django_capture_on_commit_callbacks(execute=True):
        answer = hosting.post(f"/v1/hosting/mailboxes/{body['id']}/cancel-subscription", {}, format="json")
    assert answer.status_code == 200 and answer.json()["status"] == "requested"
    assert hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()["auto_renew"] is False
    assert PartnerMailbox.objects.get(pk=body["id"]).status == "active"  # runs to the period end
    clock(django_capture_on_commit_callbacks, "--days", "31")
    mailbox.refresh_from_db()
    assert mailbox.status == "expired" and Mailbox.objects.get(pk=mailbox.mailbox_id).is_active is False
    assert len(events("partner_mailbox.expired")) == 1


def test_cancel_now(hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    body = create(hosting).json()
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        hosting.post(f"/v1/hosting/mailboxes/{body['id']}/cancel-subscription", {"immediate": True}, format="json")
    assert PartnerMailbox.objects.get(pk=body["id"]).status == "expired"
    assert events("partner_mailbox.expired")[0]["mailbox_id"] == body["id"]


def test_upgrade_applies_the_plan_and_quota_on_confirmation(hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    body = create(hosting).json()
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    same = hosting.post(f"/v1/hosting/mailboxes/{body['id']}/upgrade", {"new_plan_type": "pro"}, format="json")
    assert same.status_code == 400
    no_price = hosting.post(f"/v1/hosting/mailboxes/{body['id']}/upgrade", {"new_plan_type": "premium"},
                            format="json")
    assert no_price.status_code == 400 and "retail price" in no_price.json()["detail"]
    set_price(hosting, plan="premium", amount=12)
    with django_capture_on_commit_callbacks(execute=True):
        answer = hosting.post(f"/v1/hosting/mailboxes/{body['id']}/upgrade", {"new_plan_type": "premium"},
                              format="json")
    assert answer.status_code == 200
    mailbox = PartnerMailbox.objects.get(pk=body["id"])
    assert mailbox.plan_type == "premium" and mailbox.mailbox.plan.code == "premium"
    assert hosting.get(f"/v1/hosting/mailboxes/{body['id']}/subscription").json()["total_price"] == 12


def test_unpaid_for_seven_days_the_mailbox_and_account_are_deleted(hosting, partner,
                                                                    django_capture_on_commit_callbacks):
    set_price(hosting)
    create(hosting)
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert payg_abandoned_sweep() == 0
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)), \
            django_capture_on_commit_callbacks(execute=True):
        assert payg_abandoned_sweep() == 1
    assert not PartnerMailbox.objects.exists() and not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert events("partner_mailbox.payment_abandoned")[0]["email_address"] == "ann@acme.test"
    assert LocalCheckout.objects.get().status == "expired"
    assert Purchase.objects.get().status == "expired"


def test_delete_while_pending_removes_everything_and_a_late_payment_is_refunded(
        hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    body = create(hosting).json()
    token = body["checkout_url"].rstrip("/").rsplit("/", 1)[-1]
    LocalCheckout.objects.filter(token=token).update(status="open")
    with django_capture_on_commit_callbacks(execute=True):
        assert hosting.delete(f"/v1/hosting/mailboxes/{body['id']}").status_code == 204
    assert not Mailbox.objects.filter(address="ann@acme.test").exists()
    assert LocalCheckout.objects.get(token=token).status == "expired"
    LocalCheckout.objects.filter(token=token).update(status="open")  # the customer paid in a tab left open
    with django_capture_on_commit_callbacks(execute=True):
        LocalProvider().checkout_complete(token, paid=True)
    payment = Payment.objects.get()
    assert payment.refunded_at is not None and not LedgerEntry.objects.exclude(amount_minor=0).filter(
        kind="margin").exists()


def test_slot_funded_mailboxes_refuse_pay_as_you_go_operations(hosting, partner):
    from mailcore.domains.models import Domain

    created = hosting.post("/v1/hosting/mailboxes", {"domain_id": Domain.objects.get(name="acme.test").pk,
                                                     "local_part": "bob", "password": "long enough 1",
                                                     "plan_id": "pro"}, format="json").json()  # trial allowance
    base = f"/v1/hosting/mailboxes/{created['id']}"
    assert hosting.get(f"{base}/subscription").status_code == 400
    assert hosting.post(f"{base}/cancel-subscription", {}, format="json").status_code == 400
    assert hosting.post(f"{base}/upgrade", {"new_plan_type": "premium"}, format="json").status_code == 400
    assert hosting.post(f"{base}/addons/purchase", {"type": "extra_storage", "return_url": RETURN},
                        format="json").status_code == 400


def test_a_strangers_mailbox_is_404_on_every_endpoint(hosting, partner, db):
    other = UserFactory(email="other@example.test", account__plan_code="premium")
    theirs_partner = partner_approve(partner=hosting_partner_enable(account=other.account, status="pending"))
    make_domain(other.account, "theirs.test")
    from billing.services.payg import payg_mailbox_open, retail_price_set
    from mailcore.domains.models import Domain

    retail_price_set(partner=theirs_partner, plan_type="pro", currency="usd", retail_price=5)
    theirs = payg_mailbox_open(partner=theirs_partner, domain=Domain.objects.get(name="theirs.test"),
                               local_part="x", password="long enough 1", plan_id="pro", return_url=RETURN)
    base = f"/v1/hosting/mailboxes/{theirs.pk}"
    for method, path, body in [("get", base, None), ("delete", base, None), ("get", f"{base}/subscription", None),
                               ("post", f"{base}/cancel-subscription", {}),
                               ("post", f"{base}/upgrade", {"new_plan_type": "premium"}),
                               ("post", f"{base}/addons/purchase", {"type": "extra_storage", "return_url": RETURN})]:
        response = getattr(hosting, method)(path, body, format="json") if body is not None else getattr(
            hosting, method)(path)
        assert response.status_code == 404, (method, path)
    assert PartnerMailbox.objects.filter(pk=theirs.pk).exists()


def test_mailbox_add_ons(hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting)
    body = create(hosting).json()
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    base = f"/v1/hosting/mailboxes/{body['id']}/addons/purchase"
    storage = hosting.post(base, {"type": "extra_storage", "quantity": 2, "return_url": RETURN}, format="json")
    assert storage.status_code == 200
    assert set(storage.json()) == {"payment_method_id", "reference", "checkout_url", "status"}
    assert storage.json()["status"] == "pending_payment"
    extra = hosting.post(base, {"type": "extra_mailbox", "return_url": RETURN}, format="json").json()
    pay(storage.json()["checkout_url"], django_capture_on_commit_callbacks)
    pay(extra["checkout_url"], django_capture_on_commit_callbacks)
    assert Mailbox.objects.get(address="ann@acme.test").extra_storage_mb == 2048
    assert MailboxSlot.objects.filter(plan_type="pro", status="unused").count() == 1
    assert hosting.post(base, {"type": "extra_disk", "return_url": RETURN}, format="json").status_code == 422


def test_the_ledger_credits_once_and_payouts_reserve_the_balance(hosting, partner, django_capture_on_commit_callbacks):
    set_price(hosting, amount=30)
    body = create(hosting).json()
    with django_capture_on_commit_callbacks() as delivered:
        LocalProvider().checkout_complete(body["checkout_url"].rstrip("/").rsplit("/", 1)[-1], paid=True)
    for deliver in delivered * 2:  # the same event twice
        deliver()
    assert LedgerEntry.objects.get().amount_minor == 2800
    state = hosting.get("/partners/me/payouts").json()
    assert state["balances"] == [{"currency": "usd", "available": 28, "reserved": 0, "paid_out": 0}]
    assert hosting.post("/partners/me/payouts", {"amount": 10, "currency": "usd"}, format="json").status_code == 422
    assert hosting.post("/partners/me/payouts", {"amount": 29, "currency": "usd"}, format="json").status_code == 422
    first = hosting.post("/partners/me/payouts", {"amount": 25, "currency": "usd"}, format="json")
    assert first.status_code == 201 and first.json()["status"] == "requested"
    assert hosting.get("/partners/me/payouts").json()["balances"][0] | {} == {
        "currency": "usd", "available": 3, "reserved": 25, "paid_out": 0}
    payout_decide(payout=Payout.objects.get(), paid=False, note="bank details missing")
    assert hosting.get("/partners/me/payouts").json()["balances"][0]["available"] == 28
    second = hosting.post("/partners/me/payouts", {"amount": 20, "currency": "usd"}, format="json").json()
    payout_decide(payout=Payout.objects.get(pk=second["id"]), paid=True)
    assert hosting.get("/partners/me/payouts").json()["balances"][0] == {
        "currency": "usd", "available": 8, "reserved": 0, "paid_out": 20}


def test_deleting_a_paid_mailbox_never_touches_the_partners_own_plan(hosting, partner, alice,
                                                                     django_capture_on_commit_callbacks):
    from billing.models import Subscription

    set_price(hosting)
    body = create(hosting).json()
    pay(body["checkout_url"], django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert hosting.delete(f"/v1/hosting/mailboxes/{body['id']}").status_code == 204
    assert Subscription.objects.get().status == "canceled"
    alice.account.refresh_from_db()
    assert alice.account.plan.code == "premium"  # the customer's subscription ending is not the partner's
    assert hosting.get("/subscriptions/me").json()["subscription"] is None


def test_the_pending_purchase_pages_of_a_mailbox_checkout_work_in_the_portal(hosting, partner, alice):
    from testkit.clients import login_client

    set_price(hosting)
    create(hosting)
    reference = Purchase.objects.get().reference
    portal = login_client(alice)
    assert portal.get(f"/portal/billing/purchases/{reference}/").status_code == 200
    assert portal.get("/portal/billing/").status_code == 200
