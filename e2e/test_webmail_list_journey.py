"""A mailbox owner signs in to the webmail, searches the Inbox, moves every matching message to a
folder in one go, walks the list with the keyboard and finds the shortcut help; the same pages at
phone width. Screenshots under e2e/screenshots/webmail-*.png."""
import re

import pytest
from playwright.sync_api import expect

from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}


def mailbox_with_mail():
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    store = store_for(mailbox)
    store.ensure_folders()
    for index in range(4):
        store.deliver(make_message(f"Weekly digest {index}", sender="Digest <news@digest.test>", to=mailbox.address),
                      recipient=mailbox.address, envelope_from="news@digest.test")
    for subject in ("Dinner on Friday?", "Your invoice"):
        store.deliver(make_message(subject, sender="Amy <amy@friends.test>", to=mailbox.address,
                                   attachments=[("invoice.pdf", "application/pdf", b"%PDF-1.4")] if "invoice" in subject else ()),
                      recipient=mailbox.address, envelope_from="amy@friends.test")
    store.create_folder("Newsletters")
    return mailbox


def sign_in(page, live_server, address):
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")


def test_search_then_move_everything_matching_and_walk_with_the_keyboard(plans, page, live_server, screenshot):
    mailbox = mailbox_with_mail()
    sign_in(page, live_server, mailbox.address)
    rows = page.locator("[data-message-row]")
    expect(rows).to_have_count(6)
    screenshot("webmail-inbox")

    # search by sender, done by the store's server; htmx swaps the list and the address keeps the query
    page.get_by_text("Search options and sorting").click()
    page.get_by_role("textbox", name=re.compile(r"^From\b")).fill("digest.test")
    page.get_by_role("button", name="Apply").first.click()
    expect(rows).to_have_count(4)
    assert "from=digest.test" in page.url
    screenshot("webmail-search")

    # select the whole page, move to Newsletters: the status line announces it, the list is empty
    page.get_by_label("Select every message on this page").check()
    page.get_by_label("Action").select_option("move")
    page.get_by_label("Folder to move to").select_option("Newsletters")
    page.get_by_role("button", name="Apply").last.click()
    expect(page.get_by_role("status").filter(has_text="4 messages moved to Newsletters.")).to_be_visible()
    expect(rows).to_have_count(0)
    assert store_for(mailbox).list("Newsletters").total == 4

    # the keyboard: j moves down the Inbox, s stars the current message, ? opens the help
    page.goto(f"{live_server.url}/webmail/inbox/")
    expect(rows).to_have_count(2)
    page.keyboard.press("j")
    expect(rows.first).to_have_class("mail-row mail-row--unread mail-row--current")
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_attribute("aria-current", "true")
    page.keyboard.press("s")
    expect(page.get_by_role("status").filter(has_text="1 message starred.")).to_be_visible()
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    screenshot("webmail-shortcuts")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.keyboard.press("/")
    expect(page.get_by_role("searchbox")).to_be_focused()

    # phone width: one column, rows readable, the folder strip above
    page.set_viewport_size(PHONE)
    page.goto(f"{live_server.url}/webmail/inbox/")
    expect(rows).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot("webmail-inbox-phone")
    page.goto(f"{live_server.url}/webmail/folders/")
    expect(page.get_by_role("heading", name="Folders", level=1)).to_be_visible()
    screenshot("webmail-folders-phone")
