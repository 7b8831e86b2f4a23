"""A reply the relay refuses comes back to its owner: Ann replies to Amy from the Inbox and leaves
the page; the dispatch worker meets a real SMTP server on loopback that refuses the address (550).
On the next page Ann sees the notice "Your message to ... was not sent: ...", opens her reply in
Drafts with the reason beside it, finds the bounce from the Mail Delivery System in her Inbox, fixes
the address and sends it again; the notice goes. Screenshots under e2e/screenshots/webmail-send-failure*.png."""
import re

import pytest
from playwright.sync_api import expect

from mailcore.mailboxes.services import mailbox_set_identity
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message
from testkit.smtp_sink import smtp_sink

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
REFUSAL = "550 5.1.1 <amy@friends.test>: Recipient address rejected: User unknown"


def test_a_refused_reply_comes_back_as_a_notice_a_draft_and_a_bounce(plans, page, live_server, screenshot, settings):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = mailbox_set_identity(mailbox=make_mailbox(user.account, "ann@example.test", password=PASSWORD),
                                   display_name="Ann Example")
    store = store_for(mailbox)
    store.ensure_folders()
    store.deliver(make_message("Dinner on Friday?", "Shall we meet at eight?", sender="Amy <amy@friends.test>",
                               to=mailbox.address), recipient=mailbox.address, envelope_from="amy@friends.test")
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    with smtp_sink(refuse={"amy@friends.test": REFUSAL}) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        page.goto(f"{live_server.url}/webmail/")
        page.get_by_label("Email address").fill(mailbox.address)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_server.url}/webmail/inbox/")

        uid = store.list("INBOX").messages[0].uid
        page.goto(f"{live_server.url}/webmail/compose/reply/INBOX/{uid}/")
        page.locator("textarea[name=body]").press("Control+Home")
        page.keyboard.type("Yes, eight is good. I'll book a table.")
        page.get_by_label("Undo send").select_option("0")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.get_by_role("heading", name="Sending", level=1)).to_be_visible()
        page.goto(f"{live_server.url}/webmail/inbox/")  # Ann moves on

        assert outbound_dispatch_due() == 1  # the worker: the relay refuses for good
        assert sink.messages == []

        page.reload()
        notice = page.get_by_role("alert").filter(has_text="was not sent")
        expect(notice).to_contain_text(f"Your message to amy@friends.test was not sent: the receiving server "
                                       f"refused it: {REFUSAL}")
        expect(page.get_by_role("link", name="Mail Delivery System")).to_have_count(0)  # sender column shows names
        expect(page.locator("body")).to_contain_text("Undelivered Mail Returned to Sender: Re: Dinner on Friday?")
        screenshot("webmail-send-failure-notice")
        page.set_viewport_size(PHONE)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        screenshot("webmail-send-failure-notice-phone")
        page.set_viewport_size({"width": 1280, "height": 860})

        notice.get_by_role("link", name="Open it in Drafts").click()
        expect(page.get_by_role("heading", name="Draft", level=1)).to_be_visible()
        expect(page.locator("body")).to_contain_text(REFUSAL)
        expect(page.locator("textarea[name=body]")).to_have_value(
            re.compile(r"^Yes, eight is good\. I'll book a table\."))
        screenshot("webmail-send-failure-draft")

        page.get_by_label("To", exact=True).fill("Amy <amy@work.test>")
        page.get_by_label("Undo send").select_option("0")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.get_by_role("heading", name="Sending", level=1)).to_be_visible()
        assert outbound_dispatch_due() == 1
        assert [m.rcpt_tos for m in sink.messages] == [["amy@work.test"]]
        page.goto(f"{live_server.url}/webmail/inbox/")
        expect(page.get_by_role("alert").filter(has_text="was not sent")).to_have_count(0)
        assert store.list("Drafts").messages == []
    assert errors == []
