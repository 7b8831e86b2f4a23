"""A partner sets a retail price, creates a pay-as-you-go mailbox and copies its checkout link; the
customer opens the link in a browser of their own and pays on the local checkout; the partner sees
the mailbox turn active, and the customer signs in over IMAP (refused before the payment)."""
import imaplib

import pytest
from django.core import mail
from playwright.sync_api import expect

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
    partner = hosting_partner_enable(account=user.account)  # active, billed in USD
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    log_in(user.email, PASSWORD)

    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    expect(page.get_by_label("Pay-as-you-go (your customer pays you)")).to_be_disabled()
    page.get_by_role("link", name="set one on Retail prices").click()
    expect(page.get_by_role("heading", level=1, name="Retail prices")).to_be_visible()
    page.get_by_label("Plan").select_option("pro")
    expect(page.get_by_text("In USD, your billing currency: your customers pay in it.")).to_be_visible()
    page.get_by_label("Price per mailbox and month").fill("7.50")
    page.get_by_role("button", name="Save price").click()
    expect(page.get_by_role("cell", name="$5.50")).to_be_visible()

    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    page.get_by_label("Address, the part before the @").fill("ann")
    page.get_by_label("Domain").select_option(label="acme.test")
    page.get_by_label("Password").fill(MAILBOX_PASSWORD)
    expect(page.get_by_text("Your customer pays you $7.50 a month.")).to_be_visible()
    page.get_by_label("Pay-as-you-go (your customer pays you)").check()
    page.get_by_role("button", name="Create mailbox").click()
    expect(page.get_by_role("heading", level=1, name="ann@acme.test")).to_be_visible()
    checkout_url = page.get_by_label("Checkout link").input_value()
    assert "/billing/checkout/" in checkout_url
    screenshot("payg-mailbox-pending")
    page.get_by_label("Your customer's email address").fill("ann.customer@home.test")
    page.get_by_role("button", name="Email the link to my customer").click()
    expect(page.locator("#payg")).to_contain_text("Sent to ann.customer@home.test")
    assert checkout_url in mail.outbox[-1].body and mail.outbox[-1].to == ["ann.customer@home.test"]
    assert not imap_login(imap_settings, "ann@acme.test")  # the account is off until the payment

    customer = browser.new_context()  # the customer's own browser: no partner cookies
    customer_page = customer.new_page()
    customer_page.goto(checkout_url)
    expect(customer_page.get_by_text("$7.50").first).to_be_visible()
    customer_page.get_by_role("button", name="Pay").click()
    expect(customer_page.get_by_role("heading", name="Payment confirmed")).to_be_visible()
    expect(customer_page.get_by_text("Your mailbox ann@acme.test is on.")).to_be_visible()
    customer.close()

    page.reload()
    expect(page.locator("#mailbox-status")).to_contain_text("Active")
    expect(page.locator("#payg")).to_contain_text("Next billing date")
    expect(page.get_by_role("button", name="Renew for a month")).to_have_count(0)
    assert PartnerMailbox.objects.get().status == "active"
    assert imap_login(imap_settings, "ann@acme.test")

    page.once("dialog", lambda dialog: dialog.accept())  # htmx's hx-confirm
    page.get_by_role("button", name="Cancel subscription").click()
    expect(page.locator("#payg")).to_contain_text("None: it does not renew")
    assert PartnerMailbox.objects.get().subscriptions.get().cancel_at_period_end
