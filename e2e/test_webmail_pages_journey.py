"""Every webmail page the other journeys do not cover, at desktop and phone widths, for looking at:
sign-in, a message, its conversation (our own reply from Sent included), folders, labels. Each page
must fit the phone's width without sideways scrolling."""
import pytest
from playwright.sync_api import expect

from mailcore.inbox.labels import label_create
from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
WIDTHS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}


def test_every_webmail_page_at_desktop_and_phone_width(plans, page, live_server, screenshot):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    root = make_message("Quarterly plan", sender="Amy Example <amy@friends.test>", to=mailbox.address,
                        html="<h2>Plan</h2><p>Here is the plan for the next quarter.</p><ul><li>Launch</li><li>Hire</li></ul>",
                        attachments=[("plan.pdf", "application/pdf", b"%PDF-1.4")])
    store.deliver(root, recipient=mailbox.address, envelope_from="amy@friends.test")
    root_uid = store.list("INBOX").messages[0].uid
    root_id = store.fetch("INBOX", root_uid).raw.split(b"Message-ID: ")[1].split(b"\n")[0].strip().decode()
    store.append("Sent", make_message("Re: Quarterly plan", sender=mailbox.address, to="amy@friends.test",
                                      body="Looks good to me.", headers={"In-Reply-To": root_id, "References": root_id}),
                 flags=("\\Seen",))
    label_create(account=user.account, mailbox=mailbox, name="Work", color="#0e9384")

    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        if width == "desktop":
            page.goto(f"{live_server.url}/webmail/")
            screenshot("webmail-sign-in-desktop")
            page.get_by_label("Email address").fill(mailbox.address)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{live_server.url}/webmail/inbox/")
        else:
            page.context.clear_cookies()
            page.goto(f"{live_server.url}/webmail/")
            screenshot("webmail-sign-in-phone")
            page.get_by_label("Email address").fill(mailbox.address)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{live_server.url}/webmail/inbox/")
        pages = {
            "message": (f"/webmail/folders/INBOX/messages/{root_uid}/", "Quarterly plan"),
            "conversation": (f"/webmail/conversations/INBOX/{root_uid}/", "Quarterly plan"),
            "folders": ("/webmail/folders/", "Folders"),
            "labels": ("/webmail/labels/", "Labels"),
        }
        for name, (path, heading) in pages.items():
            page.goto(f"{live_server.url}{path}")
            expect(page.get_by_role("heading", level=1)).to_contain_text(heading)
            if name == "message":
                expect(page.frame_locator("iframe.message__frame").get_by_text("Here is the plan")).to_be_visible()
            if name == "conversation":
                expect(page.get_by_text("2 messages in this conversation")).to_be_visible()
            assert page.evaluate("document.documentElement.scrollWidth") <= size["width"] + 1, (name, width)
            page.evaluate("window.scrollTo(0, 0)")
            screenshot(f"webmail-{name}-{width}")
