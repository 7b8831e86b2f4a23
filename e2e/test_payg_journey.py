"""A partner sets a retail price, creates a pay-as-you-go mailbox and copies its checkout link; the
customer opens the link in a browser of their own and pays on the local checkout; the partner sees
the mailbox turn active, and the customer signs in over IMAP (refused before the payment)."""
import imaplib

import pytest
from playwright.sync_api import expect

from billing.services.partners import partner_approve
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import PASSWORD, UserFactory, make_domain

pytestmark = pytest.mark.django_db(transaction=True)
MAILBOX_PASSWORD = "customer secret 42"


def imap_login(dovecot, address: str) -> bool:
    client = imaplib.IMAP4(dovecot.host, dovecot.imap_port, timeout=10)
    try:
        client.login(address, MAILBOX_PASSWORD)
    except imaplib.IMAP4.error:
        return False
    finally:
        try:
            client.logout()
        except imaplib.IMAP4.error:
            pass
    return True


def test_a_customer_pays_for_a_pay_as_you_go_mailbox_and_signs_in(plans, imap_settings, browser, page, live_server,
                                                                   settings, log_in, screenshot):
    settings.PUBLIC_BASE_URL = live_server.url
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = partner_approve(partner=hosting_partner_enable(account=user.account, status="pending"))
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    log_in(user.email, PASSWORD)

    page.goto(f"{live_server.url}/portal/billing/retail-pricing/")
    page.get_by_label("Plan").select_option("pro")
    page.get_by_label("Currency").select_option("usd")
    page.get_by_label("Price per mailbox and month").fill("7.50")
    page.get_by_role("button", name="Save price").click()
    expect(page.get_by_role("cell", name="$5.50")).to_be_visible()

    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    page.get_by_label("Address, the part before the @").fill("ann")
    page.get_by_label("Domain").select_option(label="acme.test")
    page.get_by_label("Password").fill(MAILBOX_PASSWORD)
    page.get_by_label("Pay-as-you-go: your customer pays you monthly").check()
    page.get_by_role("button", name="Create mailbox").click()
    expect(page.get_by_role("heading", level=1, name="ann@acme.test")).to_be_visible()
    checkout_url = page.get_by_label("Checkout link").input_value()
    assert "/billing/checkout/" in checkout_url
    screenshot("payg-mailbox-pending")
    assert not imap_login(imap_settings, "ann@acme.test")  # the account is off until the payment

    customer = browser.new_context()  # the customer's own browser: no partner cookies
    customer_page = customer.new_page()
    customer_page.goto(checkout_url)
    expect(customer_page.get_by_text("$7.50").first).to_be_visible()
    customer_page.get_by_role("button", name="Pay").click()
    expect(customer_page.get_by_role("heading", name="Thank you")).to_be_visible()
    customer.close()

    page.reload()
    expect(page.locator("#mailbox-status")).to_contain_text("Active")
    expect(page.locator("#payg")).to_contain_text("Next billing date")
    assert PartnerMailbox.objects.get().status == "active"
    assert imap_login(imap_settings, "ann@acme.test")
