"""The portal's pay-as-you-go pages: retail prices, creating a pay-as-you-go mailbox, its checkout
link (copy and email), the subscription after payment (cancel, change plan), earnings and payouts,
and the console's payout actions. The local provider's signed events are delivered on commit."""
import pytest
from django.core import mail

from billing.models import LedgerEntry, Payout
from billing.providers.local import LocalProvider
from billing.services.partners import partner_approve
from mailcore.domains.models import Domain
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import login_client
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    approved = partner_approve(partner=hosting_partner_enable(account=alice.account, status="pending"))
    domain = make_domain(alice.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=approved, name="Acme Ltd")
    domain.save(update_fields=["client"])
    return approved


@pytest.fixture
def portal(alice, partner):
    return login_client(alice)


def new_payg_mailbox(portal, plan="pro"):
    return portal.post("/portal/mailboxes/new/", {
        "domain": Domain.objects.get(name="acme.test").pk, "local_part": "ann", "password": "long enough 1",
        "plan_id": plan, "display_name": "", "funding_mode": "pay_as_you_go"})


def test_retail_prices_show_the_margin_and_refuse_less_than_wholesale(portal):
    page = portal.get("/portal/billing/retail-pricing/").content.decode()
    assert "not set" in page and "$2.00" in page
    low = portal.post("/portal/billing/retail-pricing/", {"plan_type": "pro", "currency": "usd",
                                                          "retail_price": "1.50"})
    assert low.status_code == 422 and "wholesale rate" in low.content.decode()
    ok = portal.post("/portal/billing/retail-pricing/", {"plan_type": "pro", "currency": "usd", "retail_price": "7.50"},
                     follow=True)
    assert "$7.50" in ok.content.decode() and "$5.50" in ok.content.decode()


def test_a_pay_as_you_go_mailbox_needs_a_retail_price(portal):
    response = new_payg_mailbox(portal)
    assert "Set a retail price for the pro plan first" in response.content.decode()
    assert not PartnerMailbox.objects.exists()


def test_create_share_the_link_pay_and_manage(portal, django_capture_on_commit_callbacks):
    portal.post("/portal/billing/retail-pricing/", {"plan_type": "pro", "currency": "usd", "retail_price": "7.50"})
    created = new_payg_mailbox(portal)
    assert created.status_code == 302
    partner_mailbox = PartnerMailbox.objects.get()
    page = portal.get(created["Location"]).content.decode()
    assert partner_mailbox.status == "pending_payment" and "Checkout link" in page and "/billing/checkout/" in page
    assert "Renew for a month" not in page
    mail.outbox.clear()
    sent = portal.post(f"/portal/mailboxes/{partner_mailbox.pk}/payg/email-link/", {"email": "cust@home.test"},
                       follow=True)
    assert "Checkout link sent to cust@home.test" in sent.content.decode()
    assert mail.outbox[0].to == ["cust@home.test"] and "/billing/checkout/" in mail.outbox[0].body
    token = partner_mailbox.purchases.get().provider_ref
    with django_capture_on_commit_callbacks(execute=True):
        LocalProvider().checkout_complete(token, paid=True)
    page = portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/").content.decode()
    assert "Next billing date" in page and "$7.50 a month" in page and "Cancel subscription" in page
    upgrade = portal.post(f"/portal/mailboxes/{partner_mailbox.pk}/payg/upgrade/", {"new_plan_type": "premium"},
                          follow=True)
    assert "retail price for the premium plan" in upgrade.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        portal.post(f"/portal/mailboxes/{partner_mailbox.pk}/payg/cancel/", {"when": "period_end"})
    page = portal.get(f"/portal/mailboxes/{partner_mailbox.pk}/").content.decode()
    assert "it will not renew" in page
    earnings = portal.get("/portal/billing/earnings/").content.decode()
    assert "$5.50" in earnings and "Margin:" in earnings
    too_much = portal.post("/portal/billing/earnings/", {"amount": "25", "currency": "usd"})
    assert too_much.status_code == 422 and "available balance" in too_much.content.decode()
    assert not Payout.objects.exists()


def test_payouts_reserve_and_the_console_pays_or_releases(portal, partner):
    LedgerEntry.objects.create(partner=partner, currency="usd", amount_minor=5_000, kind="margin",
                               description="Margin: test")
    portal.post("/portal/billing/earnings/", {"amount": "30", "currency": "usd"})
    payout = Payout.objects.get()
    assert payout.amount_minor == 3_000 and payout.status == "requested"
    page = portal.get("/portal/billing/earnings/").content.decode()
    assert "$20.00" in page and "$30.00" in page  # available after the reservation, and the reservation


def test_another_partners_mailbox_pages_are_404(portal, db, django_capture_on_commit_callbacks):
    other = UserFactory(email="other@example.test", account__plan_code="premium")
    theirs = partner_approve(partner=hosting_partner_enable(account=other.account, status="pending"))
    make_domain(other.account, "theirs.test")
    from billing.services.payg import payg_mailbox_open, retail_price_set

    retail_price_set(partner=theirs, plan_type="pro", currency="usd", retail_price=5)
    mailbox = payg_mailbox_open(partner=theirs, domain=Domain.objects.get(name="theirs.test"), local_part="x",
                                password="long enough 1", plan_id="pro", return_url="https://x.example/")
    for path in ("payg/email-link/", "payg/cancel/", "payg/upgrade/"):
        assert portal.post(f"/portal/mailboxes/{mailbox.pk}/{path}", {"email": "a@b.test"}).status_code == 404
    assert portal.get(f"/portal/mailboxes/{mailbox.pk}/").status_code == 404


def test_the_thanks_page_is_public(client):
    assert "being confirmed" in client.get("/billing/thanks/").content.decode()
