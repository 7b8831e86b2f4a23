"""Issue 31, point 12, as seen in Chromium: a contact added in the portal appears without a reload; a
webmail bulk action with nothing chosen says so; the message frame fills the reading pane and Move to
starts on a neutral choice; the operator's authenticator set-up fits a 390 px phone, keeps its secret
across a reload and leads on to the console; and the changed pages at 1280 and 390 px."""
import time

import pytest
from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value
from playwright.sync_api import expect

from billing.services.mailboxes import partner_mailbox_open
from contacts.models import Contact
from mailcore.partners.models import MailboxSlot, PartnerClient
from mailcore.partners.services import hosting_partner_enable, slots_grant
from mailcore.store.factory import store_for
from testkit.factories import PASSWORD, UserFactory, make_domain, make_mailbox, make_message

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}
MAILBOX_PASSWORD = "mailbox-password-1"


def both(page, screenshot, name: str) -> None:
    """A screenshot at 1280 px and one at 390 px (the page must not be wider than the phone)."""
    screenshot(name)
    page.set_viewport_size(PHONE)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], name
    screenshot(f"{name}-phone")
    page.set_viewport_size(DESKTOP)


def a_partner_with_a_client_mailbox():
    user = UserFactory(email="partner@example.test", account__plan_code="free", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=5, plan_type="premium")
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    partner_mailbox = partner_mailbox_open(partner=partner, domain=domain, local_part="news",
                                           password="a-long-password", plan_id="premium", display_name="Acme News")
    return user, partner_mailbox


def test_a_partner_adds_a_contact_and_sees_it_at_once_and_is_told_which_plan_has_slots(
        plans, page, live_server, log_in, screenshot):
    user, partner_mailbox = a_partner_with_a_client_mailbox()
    log_in(user.email, PASSWORD)

    page.goto(f"{live_server.url}/portal/mailboxes/{partner_mailbox.pk}/contacts/")
    expect(page.get_by_role("heading", name="No contacts yet")).to_be_visible()
    page.locator("#id_new_name").fill("Ann Baker")
    page.locator("#id_new_email").fill("ann@bakery.test")
    with page.expect_response(lambda response: "/contacts/add/" in response.url):
        page.get_by_role("button", name="Add contact").click()
    contacts = page.locator("#contacts")
    expect(contacts.get_by_role("cell", name="ann@bakery.test", exact=True)).to_be_visible()  # no reload
    expect(contacts).to_contain_text("1 contact")
    assert Contact.objects.filter(email="ann@bakery.test").count() == 1
    both(page, screenshot, "smallui-contacts-added")

    # a Pro mailbox with only Premium slots: the form names the plan that has them and offers it
    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    form = page.locator("#mailbox-form")
    form.locator("input[name=local_part]").fill("bea")
    form.locator("select[name=domain]").select_option(label="acme.test")
    form.locator("input[name=password]").fill("a-long-password")
    form.locator("input[name=plan_id][value=pro]").check()
    form.locator("input[name=funding_mode][value=slot]").check()
    form.get_by_role("button", name="Create mailbox").click()
    alert = page.locator("#mailbox-form [role=alert]")
    expect(alert).to_contain_text("You have no unused Pro slot")
    expect(alert).to_contain_text("Your unused slots are for Premium (4 unused)")
    both(page, screenshot, "smallui-mailbox-slot-shortage")
    alert.get_by_role("link", name="Create as Premium").click()
    expect(page.locator("input[name=plan_id][value=premium]")).to_be_checked()
    assert MailboxSlot.objects.filter(status="unused").count() == 4


def test_the_webmail_says_when_nothing_is_chosen_and_the_frame_fills_the_reading_pane(
        plans, settings, page, live_server, screenshot):
    settings.MAIL_STORE, settings.SMTP_URL = "embedded", ""
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=MAILBOX_PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    long_html = "".join(f"<p>Paragraph {number} of the quarterly report.</p>" for number in range(80))
    store.deliver(make_message("Quarterly report", to=mailbox.address, html=long_html), recipient=mailbox.address,
                  envelope_from="bob@elsewhere.test")
    uid = store.list("INBOX").messages[0].uid

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(MAILBOX_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    page.get_by_role("button", name="Apply").click()
    problem = page.locator("#bulk-problem")
    expect(problem).to_have_text("Nothing was changed: select at least one message first (tick the box beside it).")
    expect(page.locator("#mail-status")).to_have_text("1 message.")  # said once, in the alert
    both(page, screenshot, "smallui-webmail-bulk-nothing-chosen")

    page.goto(f"{live_server.url}/webmail/folders/INBOX/messages/{uid}/")
    frame = page.locator("iframe.message__frame")
    expect(frame).to_be_visible()
    assert frame.get_attribute("sandbox") == "allow-popups allow-popups-to-escape-sandbox"
    expect(page.locator("#move-target")).to_have_value("")
    expect(page.locator("#move-target option:checked")).to_have_text("Move to…")
    for viewport in (DESKTOP, PHONE, {"width": 1280, "height": 1200}):
        page.set_viewport_size(viewport)
        height = frame.bounding_box()["height"]
        # the screen below the sticky top bar (56 px) less a margin: not a fixed ~560 px
        assert viewport["height"] - 56 - 24 <= height <= viewport["height"] - 56, (viewport, height)
    page.set_viewport_size(DESKTOP)
    frame.scroll_into_view_if_needed()
    expect(frame.content_frame.get_by_text("Paragraph 79 of the quarterly report.")).to_be_attached()
    page.evaluate("window.scrollTo(0, 0)")
    both(page, screenshot, "smallui-webmail-message")


def totp_code(secret: str) -> str:
    if time.time() % 30 > 29:
        time.sleep(1.1)
    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def test_an_operators_first_sign_in_sets_up_the_authenticator_on_a_phone_and_opens_the_console(
        plans, page, live_server, screenshot):
    operator = UserFactory(email="olive@mailwell.test", is_staff=True, is_superuser=True)
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Email").fill(operator.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    # straight to the QR code: the password just typed is not asked for again
    page.wait_for_url(f"{live_server.url}/accounts/2fa/totp/activate/")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    secret = page.locator("#authenticator_secret").input_value()
    screenshot("smallui-mfa-activate-phone")
    page.reload()
    assert page.locator("#authenticator_secret").input_value() == secret  # the same secret after a reload
    page.set_viewport_size(DESKTOP)
    screenshot("smallui-mfa-activate")

    page.get_by_label("Authenticator code").fill(totp_code(secret))
    page.get_by_role("button", name="Activate").click()
    link = page.get_by_role("link", name="Continue to the operator console")
    expect(link).to_be_visible()
    both(page, screenshot, "smallui-mfa-done")
    link.click()
    expect(page.get_by_role("heading", name="Operator console")).to_be_visible()
    both(page, screenshot, "smallui-console")


def test_the_changed_portal_pages_at_desktop_and_phone_width(plans, page, live_server, log_in, screenshot):
    from campaigns.services import campaign_create
    from contacts.services import client_address_book

    # a Free account: the dashboard offers no domain it cannot add; its own domain's records
    owner = UserFactory(email="dana@example.test", account__plan_code="free")
    log_in(owner.email, PASSWORD)
    expect(page.get_by_text("Your own domains come with the hosting partner program")).to_be_visible()
    both(page, screenshot, "smallui-dashboard-free")
    make_domain(owner.account, "dana.test")
    page.goto(f"{live_server.url}/portal/account/domains/")
    expect(page.get_by_role("heading", name="dana.test")).to_be_visible()
    expect(page.get_by_text("8 of 8 records right")).to_be_visible()
    both(page, screenshot, "smallui-account-domains")
    page.goto(f"{live_server.url}/portal/partner/apply/")
    expect(page.get_by_text("whatever your own plan (Free too)")).to_be_visible()
    both(page, screenshot, "smallui-become-partner")
    page.get_by_role("button", name="Log out").click()

    # a partner: prices and payouts in its own currency only; a campaign previewed for a sample contact
    user, partner_mailbox = a_partner_with_a_client_mailbox()
    log_in(user.email, PASSWORD)
    page.goto(f"{live_server.url}/portal/billing/retail-pricing/")
    expect(page.locator("main")).not_to_contain_text("NGN")
    both(page, screenshot, "smallui-retail-pricing")
    page.goto(f"{live_server.url}/portal/billing/earnings/")
    expect(page.get_by_role("heading", name="Your customers' payments")).to_be_visible()
    both(page, screenshot, "smallui-earnings")
    page.goto(f"{live_server.url}/portal/webhooks/")
    expect(page.get_by_role("heading", level=1, name="Webhooks")).to_be_visible()
    both(page, screenshot, "smallui-partner-webhooks")

    book = client_address_book(client=PartnerClient.objects.get())
    campaign = campaign_create(mailbox=partner_mailbox.mailbox, book=book, from_email=partner_mailbox.mailbox.address,
                               name="Launch",
                               subject="{{first_name}}, pre-order", body_html="<p>Hi {{first_name|there}},</p>",
                               postal_address="1 Market Street, Springfield")
    page.goto(f"{live_server.url}/portal/mailboxes/{partner_mailbox.pk}/campaigns/{campaign.pk}/")
    expect(page.get_by_text("Alex, pre-order")).to_be_visible()
    frame = page.locator("iframe.campaign-preview")
    frame.scroll_into_view_if_needed()
    expect(frame.content_frame.get_by_text("Hi Alex,")).to_be_visible()
    page.evaluate("window.scrollTo(0, 0)")
    both(page, screenshot, "smallui-campaign-preview")
