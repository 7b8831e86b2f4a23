"""The Mail apps page with the embedded store (make run's default), at desktop and phone widths: it says
mail apps cannot connect (no IMAP or SMTP server runs) and offers only what works: contacts and
calendar sync. Each width fits without sideways scrolling."""
import pytest
from playwright.sync_api import expect

from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
WIDTHS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}


def test_the_mail_apps_page_says_no_mail_server_runs_with_the_embedded_store(plans, page, live_server, screenshot,
                                                                              settings):
    settings.MAIL_STORE = "embedded"
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.goto(f"{live_server.url}/webmail/settings/mail-apps/")
        expect(page.get_by_role("heading", name="Mail apps cannot connect to this server")).to_be_visible()
        expect(page.get_by_role("link", name="Download the profile")).to_have_count(0)
        expect(page.get_by_role("rowheader", name="Contacts (CardDAV)")).to_be_visible()
        dav_row = page.get_by_role("row", name="Contacts (CardDAV)")
        expect(dav_row).to_contain_text(f"{live_server.url}/dav/")  # where this owner reaches the webmail
        expect(dav_row).to_contain_text("None (plain HTTP)")
        assert page.evaluate("document.documentElement.scrollWidth") <= size["width"] + 1, width
        screenshot(f"webmail-mail-apps-embedded-{width}")
