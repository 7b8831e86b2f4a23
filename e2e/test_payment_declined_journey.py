"""A customer's card is declined at the checkout of a pay-as-you-go mailbox: the page they come back
to says so (nothing charged, the mailbox not on) and offers Try again; the partner, on the mailbox's
page, reads that the payment was declined; the customer tries again on a new checkout and pays, and
the page says the mailbox is on. Screenshots at 1280 and 390 px under e2e/screenshots/payment-declined*.png."""
import pytest
from playwright.sync_api import expect

from billing.services.payg import retail_price_set
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import PASSWORD, UserFactory, make_domain

pytestmark = pytest.mark.django_db(transaction=True)
PHONE = {"width": 390, "height": 844}


def test_a_declined_customer_sees_the_truth_tries_again_and_pays(plans, browser, page, live_server, settings, log_in,
                                                                 screenshot):
    settings.PUBLIC_BASE_URL = live_server.url
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account)
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    retail_price_set(partner=partner, plan_type="pro", currency="usd", retail_price="7.50")
    log_in(user.email, PASSWORD)

    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    page.get_by_label("Address, the part before the @").fill("ann")
    page.get_by_label("Domain").select_option(label="acme.test")
    page.get_by_label("Password").fill("customer secret 42")
    page.get_by_label("Pay-as-you-go (your customer pays you)").check()
    page.get_by_role("button", name="Create mailbox").click()
    expect(page.get_by_role("heading", level=1, name="ann@acme.test")).to_be_visible()
    checkout_url = page.get_by_label("Checkout link").input_value()

    customer = browser.new_context(viewport=PHONE)
    customer_page = customer.new_page()
    errors = []
    customer_page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    customer_page.goto(checkout_url)
    customer_page.get_by_role("button", name="Decline").click()
    expect(customer_page.get_by_role("heading", name="Your payment was declined")).to_be_visible()
    expect(customer_page.get_by_text("Nothing was charged")).to_be_visible()
    expect(customer_page.get_by_text("Thank you")).to_have_count(0)
    assert customer_page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    customer_page.screenshot(path=str(screenshot("payment-declined-customer-phone")), full_page=True)
    customer_page.set_viewport_size({"width": 1280, "height": 860})
    customer_page.screenshot(path=str(screenshot("payment-declined-customer")), full_page=True)

    # reopening the checkout link the partner sent: declined, and a way to try again
    customer_page.goto(checkout_url)
    expect(customer_page.get_by_role("heading", name="Payment declined")).to_be_visible()
    customer_page.get_by_role("link", name="Try again").click()
    expect(customer_page.get_by_role("heading", name="Your payment was declined")).to_be_visible()

    page.reload()
    expect(page.locator("#payg")).to_contain_text("Your customer's payment was declined")
    screenshot("payment-declined-partner")
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("payment-declined-partner-phone")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.goto(f"{live_server.url}/portal/billing/")
    expect(page.get_by_role("status").filter(has_text="Payment declined")).to_contain_text(
        "ann@acme.test: Pro mailbox, monthly")

    customer_page.get_by_role("button", name="Try again").click()
    expect(customer_page.get_by_role("button", name="Pay")).to_be_visible()
    assert customer_page.url != checkout_url  # a new checkout for the same mailbox
    customer_page.get_by_role("button", name="Pay").click()
    expect(customer_page.get_by_role("heading", name="Payment confirmed")).to_be_visible()
    expect(customer_page.get_by_text("Your mailbox ann@acme.test is on.")).to_be_visible()
    customer_page.screenshot(path=str(screenshot("payment-declined-retried")), full_page=True)
    assert PartnerMailbox.objects.get().status == "active"
    assert errors == []
    customer.close()
