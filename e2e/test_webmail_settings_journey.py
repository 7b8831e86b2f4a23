"""A mailbox owner opens Settings in the webmail, adds a filter and turns on a vacation reply; then
mail arrives over LMTP (our listener, then the real Dovecot): the filter files it and Dovecot's
Pigeonhole answers the sender once. Every settings page at desktop and phone width:
e2e/screenshots/webmail-settings-*.png."""
import re
import smtplib
import uuid
from email import message_from_bytes
from email.policy import default as default_policy

import pytest
from playwright.sync_api import expect

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create
from mailcore.store.factory import store_for
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
PAGES = ["", "password/", "identity/", "forwarding/", "filters/", "vacation/"]


def test_a_filter_and_a_vacation_reply_set_in_the_webmail_run_in_dovecot(plans, imap_settings, settings, page,
                                                                         live_server, screenshot):
    settings.SMTP_URL = ""
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="ann", password=PASSWORD, display_name="Ann")
    store_for(mailbox).create_folder("Receipts")
    sent_before = len(imap_settings.submitted.messages)

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    page.get_by_role("link", name="Settings", exact=True).click()
    expect(page.get_by_role("heading", name="Settings", level=1)).to_be_visible()
    page.get_by_role("navigation", name="Settings").get_by_role("link", name="Filters").click()

    # a filter, with the keyboard-reachable form and no JavaScript needed
    page.get_by_label("Look at", exact=True).select_option("subject")
    page.get_by_label("Match", exact=True).select_option("contains")
    page.get_by_label("Text", exact=True).fill("receipt")
    folder = page.get_by_role("combobox", name=re.compile(r"^Folder"))
    page.get_by_label("Then", exact=True).select_option("mark_read")
    expect(folder).to_be_hidden()  # shown only for the action it belongs to (progressive: always there without JS)
    page.get_by_label("Then", exact=True).select_option("move")
    folder.select_option("Receipts")
    page.get_by_role("button", name="Add filter").click()
    expect(page.get_by_role("status").filter(has_text="Filter added.")).to_be_visible()
    expect(page.locator("#filter-list")).to_contain_text("Move to folder Receipts")

    # the vacation reply
    page.get_by_role("navigation", name="Settings").get_by_role("link", name="Vacation reply").click()
    page.get_by_label("Answer incoming mail automatically").check()
    page.get_by_role("textbox", name=re.compile(r"^Subject")).fill("Away until Monday")
    page.get_by_role("textbox", name=re.compile(r"^Reply")).fill("Hello,\nI am away until Monday.\nAnn")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").filter(has_text="Vacation reply on")).to_be_visible()

    # mail arrives: Postfix's hop is played by smtplib, then our listener hands it to Dovecot's LMTP
    raw = (f"From: Bea <bea@sender.test>\r\nTo: {mailbox.address}\r\nSubject: Your receipt for March\r\n"
           "Message-ID: <receipt-1@sender.test>\r\n\r\nThanks for your order.\r\n").encode()
    with inbound_listener() as port:
        for _ in range(2):  # the second from the same sender is filed but not answered again
            with smtplib.LMTP("127.0.0.1", port) as client:
                assert client.sendmail("bea@sender.test", [mailbox.address], raw) == {}

    replies = [m for m in imap_settings.submitted.messages[sent_before:] if m.rcpt_tos == ["bea@sender.test"]]
    assert len(replies) == 1
    reply = message_from_bytes(replies[0].content, policy=default_policy)
    assert (reply["Subject"], reply["In-Reply-To"], reply["Auto-Submitted"]) == (
        "Away until Monday", "<receipt-1@sender.test>", "auto-replied (vacation)")

    page.goto(f"{live_server.url}/webmail/folders/Receipts/")
    expect(page.locator("[data-message-row]")).to_have_count(2)
    page.goto(f"{live_server.url}/webmail/inbox/")
    expect(page.locator("[data-message-row]")).to_have_count(0)

    for viewport, suffix in (({"width": 1280, "height": 860}, ""), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        for path in PAGES:
            page.goto(f"{live_server.url}/webmail/settings/{path}")
            expect(page.get_by_role("navigation", name="Settings")).to_be_visible()
            screenshot(f"webmail-settings-{path.strip('/') or 'overview'}{suffix}")
