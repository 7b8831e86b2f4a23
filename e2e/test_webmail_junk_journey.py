"""A mailbox owner finds a wanted message in Junk and gets it back: it arrived over SMTP through our
listener and was screened by the real rspamd against the loopback DNS. Its sender's domain (no DMARC
record) does not list the server it came from in SPF, and the domain's junk threshold is low, so it
lands in Junk by score. She opens Junk, reads why (the "Why this is in Junk" panel and the
sender-check warning), presses Not spam (Inbox, Junk empty) and always lets the sender in (Settings →
Spam and senders lists it), and the shop's next message goes to her Inbox. An allowed sender is honest here: allow never applies when DMARC fails,
so a DMARC-failing spoof would stay in Junk whatever she chose. Screenshots at 1280 and 390 px:
e2e/screenshots/webmail-junk-*.png."""
import smtplib
import uuid

import pytest
from playwright.sync_api import expect

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create
from mailcore.store.factory import store_for
from protection.models import DomainPolicy
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}
SHOP_IP = "198.51.100.20"  # the server shop.test lists in SPF
NEW_SERVER_IP = "203.0.113.77"  # the one it actually sent from, forgotten in its SPF record


def test_an_owner_reads_why_a_message_is_in_junk_takes_it_back_and_allows_its_sender(
        plans, rspamd_settings, dns_zone, settings, tmp_path, page, live_server, screenshot):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    settings.SMTP_URL = ""
    settings.MAIL_HOST = "mx.mailwell.test"
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    DomainPolicy.objects.create(domain=domain, greylist=False, junk_at=0.5, quarantine_at=90, refuse_at=95)
    mailbox = mailbox_create(domain=domain, local_part="ann", password=PASSWORD, display_name="Ann")
    store_for(mailbox).ensure_folders()
    dns_zone.set("shop.test", "TXT", f"v=spf1 ip4:{SHOP_IP} -all")
    dns_zone.set("shop.test", "MX", "10 mx.shop.test")
    dns_zone.set("mx.shop.test", "A", SHOP_IP)

    send(mailbox.address, "Your order has shipped")
    store = store_for(mailbox)
    assert store.list("INBOX").messages == [] and len(store.list("Junk").messages) == 1

    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")

    page.goto(f"{live_server.url}/webmail/folders/Junk/")
    page.locator("[data-message-row]").get_by_text("Your order has shipped").click()
    panel = page.get_by_test_id("junk-reasons")
    expect(panel.get_by_role("heading", name="Why this is in Junk")).to_be_visible()
    expect(panel).to_contain_text("The server that sent it is not allowed to send for the sender's domain (SPF).")
    expect(panel).to_contain_text("Spam score:")
    expect(page.get_by_test_id("authentication-warning")).to_contain_text(
        "This message claims to be from shop.test but shop.test does not list the server that sent it.")
    for viewport, suffix in ((DESKTOP, ""), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        screenshot(f"webmail-junk-message{suffix}")
    page.set_viewport_size(DESKTOP)

    page.get_by_role("button", name="Not spam").click()
    page.wait_for_url(f"{live_server.url}/webmail/folders/Junk/")
    expect(page.locator("[data-message-row]")).to_have_count(0)
    page.goto(f"{live_server.url}/webmail/inbox/")
    expect(page.locator("[data-message-row]")).to_have_count(1)
    page.locator("[data-message-row]").get_by_text("Your order has shipped").click()
    expect(page.get_by_test_id("junk-reasons")).to_have_count(0)  # out of Junk: no panel

    page.get_by_role("link", name="Always let in news@shop.test").click()
    expect(page.get_by_role("heading", name="Spam and senders", level=1)).to_be_visible()
    page.get_by_role("button", name="Add sender").click()
    expect(page.get_by_test_id("allowed-senders")).to_contain_text("news@shop.test")
    page.reload()
    expect(page.get_by_test_id("allowed-senders")).to_contain_text("news@shop.test")
    for viewport, suffix in ((DESKTOP, ""), (PHONE, "-phone")):
        page.set_viewport_size(viewport)
        page.evaluate("window.scrollTo(0, 0)")  # the sticky header stays at the top of a full-page shot
        screenshot(f"webmail-junk-allowed{suffix}")

    # the shop's next message, from the same forgotten server, now skips the spam check
    send(mailbox.address, "Your parcel was delivered")
    assert [summary.subject for summary in store.list("INBOX").messages if "delivered" in summary.subject] == [
        "Your parcel was delivered"]
    assert store.list("Junk").messages == []


def send(to: str, subject: str) -> None:
    """One SMTP transaction as Postfix's before-queue proxy makes it, from the shop's unlisted server."""
    raw = (f"From: Shop News <news@shop.test>\r\nTo: {to}\r\nSubject: {subject}\r\n"
           f"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@shop.test>\r\n"
           "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
           f"Hello Ann, news about your order {uuid.uuid4().hex[:8]}.\r\n").encode()
    with inbound_listener() as port, smtplib.SMTP("127.0.0.1", port) as client:
        client.ehlo("postfix.internal")
        assert client.docmd("XFORWARD", f"NAME=[UNAVAILABLE] ADDR={NEW_SERVER_IP} HELO=mail2.shop.test "
                                        "PROTO=ESMTP")[0] == 250
        assert client.sendmail("news@shop.test", [to], raw) == {}
