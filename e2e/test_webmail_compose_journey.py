"""A mailbox owner writes a rich text message in the vendored editor (under the page's CSP), attaches
a file (uploaded at once, with progress), sees the draft autosaved, sends it with an undo window,
takes it back with Undo, sends it again, then replies to a message from the Inbox with Ctrl+Enter.
The dispatch worker delivers to a real SMTP server on loopback. Screenshots under
e2e/screenshots/webmail-compose*.png."""
import email
import re
from email import policy

import pytest
from playwright.sync_api import expect

from mailcore.mailboxes.services import mailbox_set_identity
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}


def parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


def sign_in(page, live_server, address):
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")


def test_write_rich_text_undo_send_again_and_reply(plans, page, live_server, screenshot, relay, tmp_path):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = mailbox_set_identity(mailbox=make_mailbox(user.account, "ann@example.test", password=PASSWORD),
                                   display_name="Ann Example", signature_html="<p>Ann, <i>Example Ltd</i></p>")
    store = store_for(mailbox)
    store.ensure_folders()
    store.deliver(make_message("Dinner on Friday?", "Shall we meet at eight?", sender="Amy <amy@friends.test>",
                               to=mailbox.address), recipient=mailbox.address, envelope_from="amy@friends.test")
    blocked = []
    page.on("console", lambda message: blocked.append(message.text)
            if "Content Security Policy" in message.text else None)
    sign_in(page, live_server, mailbox.address)

    # compose: the rich editor is there (the vendored Squire ran under script-src 'self')
    page.get_by_role("link", name="Compose").click()
    expect(page.get_by_role("heading", name="New message", level=1)).to_be_visible()
    toolbar = page.get_by_role("toolbar", name="Formatting")
    expect(toolbar).to_be_visible()
    expect(page.locator("textarea[name=body]")).to_be_hidden()
    page.get_by_label("To", exact=True).fill("bob@remote.test")
    page.get_by_label("Subject").fill("Plans for Friday")
    editor = page.get_by_role("textbox", name="Message")
    editor.click()
    page.keyboard.type("Hello Bob, ")
    toolbar.get_by_role("button", name="Bold").click()
    expect(toolbar.get_by_role("button", name="Bold")).to_have_attribute("aria-pressed", "true")
    page.keyboard.type("see you at eight")
    notes = tmp_path / "notes.txt"
    notes.write_text("bring the map\n")
    page.get_by_label("Attach files").set_input_files(str(notes))
    expect(page.get_by_text("notes.txt attached.")).to_be_visible()
    expect(page.get_by_role("checkbox", name="notes.txt (14 bytes)")).to_be_checked()
    expect(page.get_by_text("Draft saved at")).to_be_visible(timeout=15000)  # autosave
    assert [m.subject for m in store.list("Drafts").messages] == ["Plans for Friday"]
    expect(page.get_by_label("Undo send")).to_have_value("10")
    screenshot("webmail-compose")

    # send with the undo window, then take it back: the draft comes back as it was
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_role("heading", name="Sending", level=1)).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Sending in")).to_be_visible()
    screenshot("webmail-compose-undo")
    page.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("Sending cancelled. Your message is back in Drafts.")).to_be_visible()
    assert OutboundMessage.objects.get().status == "cancelled"
    expect(editor.locator("b")).to_have_text("see you at eight")
    expect(page.get_by_label("Subject")).to_have_value("Plans for Friday")
    expect(page.get_by_role("checkbox", name="notes.txt (14 bytes)")).to_be_checked()
    assert outbound_dispatch_due() == 0 and relay.messages == []

    # send again, at once this time
    page.get_by_label("Undo send").select_option("0")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_role("heading", name="Sending", level=1)).to_be_visible()
    assert outbound_dispatch_due() == 1
    delivered = parse(relay.messages[0].content)
    assert delivered["Subject"] == "Plans for Friday" and delivered["From"] == "Ann Example <ann@example.test>"
    html = delivered.get_body(("html",)).get_content()
    assert "<b>see you at eight</b>" in html and "<i>Example Ltd</i>" in html
    assert [a.get_filename() for a in delivered.iter_attachments()] == ["notes.txt"]
    assert store.list("Drafts").messages == []
    page.reload()
    expect(page.get_by_role("heading", name="Sent", level=1)).to_be_visible()

    # reply to Amy: recipients, subject and quote filled in; Ctrl+Enter sends
    uid = store.list("INBOX").messages[0].uid
    page.goto(f"{live_server.url}/webmail/compose/reply/INBOX/{uid}/")
    expect(page.get_by_role("heading", name="Reply", level=1)).to_be_visible()
    expect(page.get_by_label("To", exact=True)).to_have_value("Amy <amy@friends.test>")
    expect(page.get_by_label("Subject")).to_have_value("Re: Dinner on Friday?")
    body = page.locator("textarea[name=body]")  # the original was plain text: the reply starts plain
    expect(body).to_be_focused()
    expect(body).to_have_value(re.compile(r"^\n\nOn .+, Amy <amy@friends.test> wrote:\n> Shall we meet at eight\?\n$"))
    page.keyboard.type("Yes, eight is good.")
    screenshot("webmail-compose-reply")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_role("heading", name="Sending", level=1)).to_be_visible()
    assert outbound_dispatch_due() == 1
    reply = parse(relay.messages[1].content)
    assert reply["To"] == "amy@friends.test" and reply["Subject"] == "Re: Dinner on Friday?"
    assert reply["In-Reply-To"] and reply["In-Reply-To"] == parse(store.fetch("INBOX", uid).raw)["Message-ID"]
    assert reply.get_content().startswith("Yes, eight is good.\r\n\r\nOn ")

    # phone width: one column, nothing wider than the screen
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/webmail/compose/")
    expect(page.get_by_role("toolbar", name="Formatting")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("webmail-compose-phone")
    assert blocked == []
