"""An operator approves a partner application in the console (signing in with a TOTP code); the
partner buys 5 Pro slots through the local checkout, waits for the confirmation, sees the slots and
creates a mailbox funded by one."""
import time

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, generate_totp_secret, hotp_value
from playwright.sync_api import expect

from mailcore.partners.models import HostingPartner, MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import PASSWORD, UserFactory, make_domain

pytestmark = pytest.mark.django_db(transaction=True)


def totp_code(secret: str) -> str:
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def test_an_approved_partner_buys_slots_and_creates_a_mailbox_with_one(plans, page, live_server, settings,
                                                                       screenshot):
    settings.PUBLIC_BASE_URL = live_server.url  # the local provider's checkout links point here
    operator = UserFactory(email="ops@mailwell.test", is_staff=True, is_superuser=True)
    EmailAddress.objects.update_or_create(user=operator, email=operator.email,
                                          defaults={"verified": True, "primary": True})
    secret = generate_totp_secret()
    TOTP.activate(operator, secret)
    applicant = UserFactory(email="partner@example.test", account__plan_code="free",
                            account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=applicant.account, status=HostingPartner.Status.PENDING)
    domain = make_domain(applicant.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])

    # the operator signs in with a password and a code, and approves the application
    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Email").fill(operator.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    page.get_by_label("Code").fill(totp_code(secret))
    page.get_by_label("Code").press("Enter")
    page.wait_for_url(f"{live_server.url}/admin/")
    page.goto(f"{live_server.url}/admin/mailcore/hostingpartner/")
    row = page.get_by_role("row").filter(has_text="Northwind Hosting")
    row.get_by_role("checkbox").check()
    page.locator("select[name=action]").select_option("approve")
    page.locator("button[name=index], input[name=index]").first.click()
    page.get_by_label("Billing currency").select_option("usd")
    screenshot("operator-approve")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messagelist")).to_contain_text("Northwind Hosting")
    partner.refresh_from_db()
    assert partner.status == "trial" and partner.trial_ends_at is not None
    page.context.clear_cookies()

    # the partner buys five Pro slots
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Email").fill(applicant.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/portal/billing/slots/")
    page.get_by_label("Slots", exact=True).fill("5")
    page.get_by_role("button", name="Continue to payment").click()
    expect(page.get_by_text("$10.00").first).to_be_visible()
    page.get_by_role("button", name="Pay").click()
    expect(page.get_by_text("Payment confirmed")).to_be_visible(timeout=15_000)
    screenshot("purchase-confirmed")
    assert MailboxSlot.objects.filter(partner=partner, plan_type="pro", status="unused").count() == 5
    partner.refresh_from_db()
    assert partner.status == "active"

    # ... sees them, and creates a mailbox that takes one
    page.goto(f"{live_server.url}/portal/billing/slots/")
    expect(page.locator("#pool-heading").locator("xpath=..")).to_contain_text("5")
    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    page.get_by_label("Address, the part before the @").fill("ann")
    page.get_by_label("Domain").select_option(label="acme.test")
    page.get_by_label("Password").fill("a long mailbox password")
    page.get_by_role("button", name="Create mailbox").click()
    expect(page.get_by_role("heading", level=1, name="ann@acme.test")).to_be_visible()
    created = PartnerMailbox.objects.get(mailbox__address="ann@acme.test")
    assert created.status == "active" and created.slot.plan_type == "pro"
    assert MailboxSlot.objects.filter(partner=partner, status="unused").count() == 4
