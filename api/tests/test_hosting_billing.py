"""Partner money over the API with the local provider: onboarding and the trial, slot pools, add-ons,
renewals paid from the pool, purchase verification, and provider webhooks' signatures.

Checkouts are completed on the provider's side (LocalProvider.checkout_complete, what its hosted
page's Pay/Decline buttons do); the signed event it sends is applied through the webhook intake.
"""
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from billing.models import Payment, ProviderEventRecord, Purchase
from billing.providers.local import LocalProvider
from billing.services.partners import partner_approve
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.events.models import Event
from mailcore.partners.lifecycle import partner_terms_sweep
from mailcore.partners.models import HostingPartner, MailboxSlot
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import new_key
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db
RETURN = "https://partner.example/billing/done"


@pytest.fixture
def partner(alice):
    applied = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.PENDING)
    return partner_approve(partner=applied)


@pytest.fixture
def hosting(api, alice, partner):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    return api


def pay(purchase_json, *, paid=True, capture):
    """Press Pay (or Decline) on the provider's page; its signed event is delivered on commit."""
    token = purchase_json["checkout_url"].rstrip("/").rsplit("/", 1)[-1]
    with capture(execute=True):
        LocalProvider().checkout_complete(token, paid=paid)


def events(name):
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def test_approval_starts_a_fourteen_day_trial_and_writes_to_the_partner(alice, django_capture_on_commit_callbacks):
    applied = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.PENDING)
    with time_machine.travel("2026-11-23 12:00Z", tick=False), django_capture_on_commit_callbacks(execute=True):
        approved = partner_approve(partner=applied, currency="ngn")
    assert approved.status == "trial" and approved.billing_currency == "ngn"
    assert approved.trial_ends_at.isoformat().startswith("2026-12-07T12:00")
    assert [message.to for message in mail.outbox] == [["alice@example.test"]]
    assert "7 December 2026" in mail.outbox[0].body and "NGN" in mail.outbox[0].body


def test_a_slot_pool_is_granted_once_on_the_confirmed_payment(hosting, partner, django_capture_on_commit_callbacks):
    response = hosting.post("/v1/hosting/slots/purchase", {"plan_type": "pro", "quantity": 5, "return_url": RETURN},
                            format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending" and body["amount"] == 10 and body["currency"] == "usd"
    assert body["checkout_url"].startswith("http") and body["reference"].startswith("mw_")
    assert MailboxSlot.objects.count() == 0  # nothing before the provider confirms
    with django_capture_on_commit_callbacks() as delivered:
        LocalProvider().checkout_complete(body["checkout_url"].rstrip("/").rsplit("/", 1)[-1], paid=True)
    for deliver in delivered * 2:  # the same signed event, delivered twice
        deliver()
    assert MailboxSlot.objects.filter(plan_type="pro", status="unused").count() == 5
    assert ProviderEventRecord.objects.count() == 1
    partner.refresh_from_db()
    assert partner.status == "active"  # the first pool ends the trial
    [pool_event] = events("partner_pool.purchased")
    assert pool_event["reference"] == body["reference"] and pool_event["quantity"] == 5
    verified = hosting.post("/v1/hosting/addons/purchase/verify", {"reference": body["reference"]}, format="json")
    assert verified.json()["status"] == "paid" and verified.json()["plan_type"] == "pro"
    pool = hosting.get("/v1/hosting/slots").json()
    assert pool["pro"] == {"unused": 5, "assigned": 0, "expired": 0, "slot_unit_price": 2}
    assert Payment.objects.get().amount_minor == 1000


def test_a_declined_checkout_grants_nothing(hosting, django_capture_on_commit_callbacks):
    body = hosting.post("/v1/hosting/slots/purchase", {"plan_type": "premium", "quantity": 2, "months": 3,
                                                       "return_url": RETURN}, format="json").json()
    assert body["amount"] == 30  # 2 slots x 3 months x $5
    pay(body, paid=False, capture=django_capture_on_commit_callbacks)
    assert MailboxSlot.objects.count() == 0 and not events("partner_pool.purchased")
    assert Purchase.objects.get().status == "failed"


def test_add_ons_raise_the_domain_limit_and_storage_once(hosting, partner, django_capture_on_commit_callbacks):
    pricing = hosting.get("/v1/hosting/addons/pricing").json()
    assert pricing == {"currency_code": "usd", "domain_slot_unit_price": 5, "storage_gb_unit_price": 0.5,
                       "domain_limit": 2, "domains_used": 0, "extra_storage_mb": 0}
    slots = hosting.post("/v1/hosting/addons/purchase", {"addon_type": "domain_slot", "quantity": 2,
                                                         "return_url": RETURN}, format="json").json()
    storage = hosting.post("/v1/hosting/addons/purchase", {"addon_type": "storage", "quantity": 3,
                                                           "return_url": RETURN}, format="json").json()
    assert (slots["amount"], storage["amount"]) == (10, 1.5)
    assert hosting.get("/v1/hosting/addons/pricing").json()["domain_limit"] == 2  # not before payment
    pay(slots, capture=django_capture_on_commit_callbacks)
    pay(storage, capture=django_capture_on_commit_callbacks)
    pay(slots, capture=django_capture_on_commit_callbacks)  # a second press on a settled checkout: nothing
    pricing = hosting.get("/v1/hosting/addons/pricing").json()
    assert pricing["domain_limit"] == 4 and pricing["extra_storage_mb"] == 3072
    assert [event["addon_type"] for event in events("partner_addon.purchased")] == ["domain_slot", "storage"]


def test_bank_transfer_is_for_ngn_accounts_only(hosting, partner):
    refused = hosting.post("/v1/hosting/addons/purchase", {"addon_type": "domain_slot", "quantity": 1,
                                                           "payment_method": "bank_transfer", "return_url": RETURN},
                           format="json")
    assert refused.status_code == 400 and "NGN" in refused.json()["detail"]
    assert Purchase.objects.count() == 0
    HostingPartner.objects.filter(pk=partner.pk).update(billing_currency="ngn")
    accepted = hosting.post("/v1/hosting/addons/purchase", {"addon_type": "domain_slot", "quantity": 1,
                                                            "payment_method": "bank_transfer", "return_url": RETURN},
                            format="json")
    assert accepted.status_code == 201
    assert accepted.json() | {"checkout_url": None, "reference": None, "created_at": None} == {
        "reference": None, "status": "pending", "checkout_url": None, "kind": "domain_slot",
        "addon_type": "domain_slot", "plan_type": None, "quantity": 1, "months": 1, "amount": 5000,
        "currency": "ngn", "payment_method": "bank_transfer", "payment_provider": "local", "created_at": None,
        "paid_at": None}


@pytest.mark.parametrize("body, field", [
    ({"addon_type": "domain", "quantity": 1, "return_url": RETURN}, "addon_type"),
    ({"addon_type": "storage", "quantity": 0, "return_url": RETURN}, "quantity"),
    ({"addon_type": "storage", "quantity": "2", "return_url": RETURN}, "quantity"),
    ({"addon_type": "storage", "quantity": 1}, "return_url"),
    ({"addon_type": "storage", "quantity": 1, "return_url": "javascript:alert(1)"}, "return_url"),
    ({"addon_type": "storage", "quantity": 1, "return_url": RETURN, "payment_method": "cash"}, "payment_method"),
])
def test_bad_purchase_fields_are_422_and_create_nothing(hosting, body, field):
    response = hosting.post("/v1/hosting/addons/purchase", body, format="json")
    assert response.status_code == 422 and field in response.json()["errors"]
    assert Purchase.objects.count() == 0


def test_verify_of_an_unknown_or_another_partners_reference_is_404(hosting, api, db):
    assert hosting.post("/v1/hosting/addons/purchase/verify", {"reference": "mw_nope"},
                        format="json").status_code == 404
    other = UserFactory(email="other@example.test", account__plan_code="premium")
    partner_approve(partner=hosting_partner_enable(account=other.account, status="pending"))
    theirs = Purchase.objects.create(reference="mw_theirs", account=other.account, kind="storage", item="storage",
                                     amount_minor=50, currency="usd", provider="local", description="1 GB")
    response = hosting.post("/v1/hosting/addons/purchase/verify", {"reference": theirs.reference}, format="json")
    assert response.status_code == 404


def test_the_addon_scopes_guard_pricing_and_purchases(api, alice, partner):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["partner:mailboxes:read"]))
    assert api.get("/v1/hosting/addons/pricing").status_code == 403
    assert api.post("/v1/hosting/addons/purchase", {"addon_type": "storage", "quantity": 1, "return_url": RETURN},
                    format="json").status_code == 403
    assert api.post("/v1/hosting/slots/purchase", {"plan_type": "pro", "quantity": 1, "return_url": RETURN},
                    format="json").status_code == 403
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=["partner:addons:read"]))
    assert api.get("/v1/hosting/addons/pricing").status_code == 200
    assert api.post("/v1/hosting/addons/purchase", {"addon_type": "storage", "quantity": 1, "return_url": RETURN},
                    format="json").status_code == 403
    assert Purchase.objects.count() == 0


def test_a_bad_or_missing_provider_signature_is_400_and_changes_nothing(hosting, client,
                                                                        django_capture_on_commit_callbacks):
    body = hosting.post("/v1/hosting/slots/purchase", {"plan_type": "pro", "quantity": 1, "return_url": RETURN},
                        format="json").json()
    forged = ('{"id":"lev_forged","type":"checkout.paid","reference":"%s","amount_minor":200,"currency":"usd"}'
              % body["reference"]).encode()
    for headers in ({}, {"HTTP_X_LOCAL_SIGNATURE": "t=1,v1=00"}, {"HTTP_X_LOCAL_SIGNATURE": "garbage"}):
        response = client.post("/billing/webhooks/local", forged, content_type="application/json", **headers)
        assert response.status_code == 400 and "signature" in response.json()["detail"]
    assert MailboxSlot.objects.count() == 0 and ProviderEventRecord.objects.count() == 0
    assert Purchase.objects.get().status == "pending"
    assert client.post("/billing/webhooks/nope", b"{}", content_type="application/json").status_code == 404


def test_the_trial_notice_once_then_expiry_then_a_pool_reactivates(hosting, partner, alice,
                                                                   django_capture_on_commit_callbacks):
    mail.outbox.clear()
    with time_machine.travel(partner.trial_ends_at - timedelta(days=6)):
        with django_capture_on_commit_callbacks(execute=True):
            assert partner_terms_sweep()["trial_expiring_soon"] == 1
            assert partner_terms_sweep()["trial_expiring_soon"] == 0
    assert len(events("partner_trial.expiring_soon")) == 1
    assert [message.subject for message in mail.outbox] == ["Your Mailwell partner trial ends soon"]
    with time_machine.travel(partner.trial_ends_at + timedelta(minutes=1)):
        assert partner_terms_sweep()["trials_ended"] == 1
        refused = hosting.get("/v1/hosting/domains")
    assert refused.status_code == 403 and "trial ended" in refused.json()["detail"]
    assert "/portal/billing/slots/" in refused.json()["detail"]
    partner.refresh_from_db()
    from billing.services.partners import pool_purchase_start

    purchase = pool_purchase_start(partner=partner, plan_type="pro", quantity=1, return_url=RETURN)
    pay({"checkout_url": purchase.checkout_url}, capture=django_capture_on_commit_callbacks)
    partner.refresh_from_db()
    assert partner.status == "active" and hosting.get("/v1/hosting/domains").status_code == 200


def test_pending_and_declined_partners_are_told_why(api, alice, django_capture_on_commit_callbacks):
    applied = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.PENDING)
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    assert "pending approval" in api.get("/v1/hosting/domains").json()["detail"]
    from billing.services.partners import partner_reject

    with django_capture_on_commit_callbacks(execute=True):
        partner_reject(partner=applied, note="We only work with registered businesses.")
    assert "declined" in api.get("/v1/hosting/domains").json()["detail"]
    assert "registered businesses" in mail.outbox[-1].body


def test_trial_timing_uses_the_configured_length(alice, settings):
    settings.PARTNER_TRIAL_DAYS = 30
    approved = partner_approve(partner=hosting_partner_enable(account=alice.account, status="pending"))
    assert (approved.trial_ends_at - timezone.now()).days in (29, 30)


def test_a_provider_that_is_down_is_a_502_and_nothing_is_created(hosting, settings):
    settings.PAYMENT_PROVIDERS = {"usd": "stripe", "ngn": "local"}
    settings.STRIPE_API_KEY, settings.STRIPE_WEBHOOK_SECRET = "sk_test_x", "whsec_x"
    settings.STRIPE_API_BASE = "http://127.0.0.1:9"  # nothing listens there
    for path, body in [("/v1/hosting/slots/purchase", {"plan_type": "pro", "quantity": 1, "return_url": RETURN}),
                       ("/v1/hosting/addons/purchase", {"addon_type": "storage", "quantity": 1,
                                                        "return_url": RETURN})]:
        response = hosting.post(path, body, format="json")
        assert response.status_code == 502
        assert "did not answer" in response.json()["detail"] and "nothing was charged" in response.json()["detail"]
    assert Purchase.objects.count() == 0
