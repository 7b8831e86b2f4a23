"""In imap mode the listener hands mail to Dovecot's LMTP (so Dovecot's quota applies), and the
owner reads it over IMAP with the mailbox's own password."""
import email.parser
import imaplib
import re
import smtplib
import uuid

import pytest

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.mailboxes.services import mailbox_create
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)


def test_mail_delivered_over_our_listener_lands_in_dovecot_and_the_owner_reads_it(
    plans, imap_settings, settings, tmp_path
):
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="owner", password="owner password 1")
    raw = (f"From: Bea <bea@sender.test>\r\nTo: {mailbox.address}\r\nSubject: Through Dovecot\r\n"
           "Message-ID: <dove1@sender.test>\r\n\r\nHello over LMTP.\r\n").encode()

    with inbound_listener() as port:
        with smtplib.LMTP("127.0.0.1", port) as client:
            assert client.sendmail("bea@sender.test", [mailbox.address], raw) == {}

    imap = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port)
    try:
        imap.login(mailbox.address, "owner password 1")
        imap.select("INBOX", readonly=True)
        _, data = imap.fetch("1", "(RFC822)")
    finally:
        imap.logout()
    stored = data[0][1]
    assert stored.endswith(raw)
    trace = email.parser.BytesHeaderParser().parsebytes(stored[: -len(raw)])
    assert (trace["Return-Path"], trace["Delivered-To"]) == ("<bea@sender.test>", mailbox.address)
    assert [(e.name, e.data["mailbox"], e.data["message_id"]) for e in Event.objects.all()] == [
        ("email.received", mailbox.address, "<dove1@sender.test>")]


def test_mail_in_dovecot_is_read_through_the_rest_api_like_an_imap_client_sees_it(plans, imap_settings, settings):
    from rest_framework.test import APIClient

    from testkit.factories import UserFactory

    user = UserFactory(account__plan_code="premium")
    domain = domain_mark_verified(domain=domain_create(account=user.account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="reader", password="reader password 1")
    raw = (f"From: Bea <bea@sender.test>\r\nTo: {mailbox.address}\r\nSubject: Read me over REST\r\n"
           "Message-ID: <rest1@sender.test>\r\n\r\nThe body.\r\n").encode()
    with inbound_listener() as port:
        with smtplib.LMTP("127.0.0.1", port) as client:
            assert client.sendmail("bea@sender.test", [mailbox.address], raw) == {}

    api = APIClient()
    api.force_login(user)
    listing = api.get("/inbox", {"email": mailbox.address}).json()
    assert listing["total"] == 1
    [summary] = listing["messages"]
    [received] = Event.objects.filter(name="email.received")
    assert received.data["size_bytes"] == summary["size"]  # both count the stored copy, trace headers included
    assert (summary["subject"], summary["from"], summary["seen"]) == ("Read me over REST", "Bea <bea@sender.test>", False)
    message = api.get(f"/inbox/{summary['uid']}", {"email": mailbox.address}).json()
    assert message["body_text"].strip() == "The body."
    assert api.patch(f"/inbox/{summary['uid']}?email={mailbox.address}", {"seen": True, "starred": True},
                     format="json").status_code == 200
    folders = {f["name"] for f in api.get("/inbox/folders", {"email": mailbox.address}).json()["folders"]}

    imap = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port)
    try:
        imap.login(mailbox.address, "reader password 1")
        _, listed = imap.list()
        imap.select("INBOX", readonly=True)
        _, flags = imap.uid("fetch", str(summary["uid"]), "(FLAGS)")
    finally:
        imap.logout()
    imap_folders = {re.match(r'\(.*?\) (?:"."|NIL) (.+)', line.decode()).group(1).strip('"') for line in listed}
    assert folders == imap_folders
    assert b"\\Seen" in flags[0] and b"\\Flagged" in flags[0]


def test_a_connected_mailbox_at_another_provider_works_through_the_api(plans, imap_settings, settings):
    """Dovecot plays the other provider: the account connects with the owner's own login."""
    from rest_framework.test import APIClient

    from mailcore.mailboxes.models import Mailbox
    from testkit.factories import UserFactory

    provider_account = Account.objects.create(name="Provider", plan=Plan.objects.get(code="pro"))
    domain = domain_mark_verified(domain=domain_create(account=provider_account, name=f"p{uuid.uuid4().hex[:10]}.test"))
    remote = mailbox_create(domain=domain, local_part="me", password="remote password 1")
    imap = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port)
    imap.login(remote.address, "remote password 1")
    imap.append("INBOX", "", imaplib.Time2Internaldate(0),
                b"From: x@y.test\r\nSubject: At the other provider\r\n\r\nhello\r\n")
    imap.logout()
    # the address is now connected by another account, which proves it owns it with the mailed code
    from django.core import mail

    settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK = True  # Dovecot plays a provider on the internet
    remote_address = remote.address
    user = UserFactory(account__plan_code="pro")
    api = APIClient()
    api.force_login(user)
    connect = {"email": f"me.elsewhere@{domain.name}x", "imap_host": imap_settings.host,
               "imap_port": imap_settings.imap_port, "imap_tls": False, "username": remote_address}
    wrong = api.post("/mailboxes/connected", {**connect, "password": "wrong password"}, format="json")
    assert wrong.status_code == 422
    assert "refused this username and password" in wrong.json()["errors"]["password"][0]
    assert not Mailbox.objects.filter(account=user.account).exists()

    pending = api.post("/mailboxes/connected", {**connect, "password": "remote password 1"}, format="json")
    assert pending.status_code == 202, pending.json()
    code = re.search(r"^    (\d{8})$", mail.outbox[-1].body, re.M).group(1)
    created = api.post("/mailboxes/connected/confirm", {"email": connect["email"], "code": code}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["kind"] == "connected"
    stored = Mailbox.objects.get(pk=created.json()["id"])
    assert "remote password 1" not in stored.imap_password_encrypted
    listing = api.get("/inbox", {"email": connect["email"]}).json()
    assert [m["subject"] for m in listing["messages"]] == ["At the other provider"]


def test_the_quota_warning_in_dovecot_mode_reads_dovecots_own_figure_without_logging_in(plans, imap_settings,
                                                                                         settings, tmp_path):
    """Dovecot copies each mailbox's usage into dovecot_quota (quota_clone): the listener reads it
    there after each delivery, so the 90 % warning fires once, on the message that crosses the line,
    and Dovecot never sees an IMAP login for it."""
    settings.SMTP_URL = ""
    tiny = Plan.objects.create(code="tiny1", name="Tiny", rank=99, sends_per_day=1, sends_per_hour=1, storage_mb=1,
                               attachment_max_mb=1)
    account = Account.objects.create(name="Owner", plan=tiny)
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"q{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="full", password="owner password 1")
    line = "x" * 998 + "\r\n"

    def deliver(number: int, lines: int) -> dict:
        raw = (f"From: bea@sender.test\r\nTo: {mailbox.address}\r\nSubject: Part {number}\r\n"
               f"Message-ID: <q{number}@sender.test>\r\n\r\n{line * lines}").encode()
        with smtplib.LMTP("127.0.0.1", port) as client:
            return client.sendmail("bea@sender.test", [mailbox.address], raw)

    logins_before = imap_settings.log().count(f"Master user logging in as {mailbox.address}")
    with inbound_listener() as port:
        assert deliver(1, 480) == {}  # about 46 %
        assert not Event.objects.filter(name="mailbox.quota_reached").exists()
        assert deliver(2, 470) == {}  # about 91 %
        assert deliver(3, 10) == {}  # about 92 %: no second warning
    assert imap_settings.log().count(f"Master user logging in as {mailbox.address}") == logins_before

    imap = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port)
    try:
        imap.login(mailbox.address, "owner password 1")
        _, quota = imap.getquotaroot("INBOX")
    finally:
        imap.logout()
    used_kib, limit_kib = map(int, re.search(rb"STORAGE (\d+) (\d+)", quota[1][0]).groups())
    [warning] = [event.data for event in Event.objects.filter(name="mailbox.quota_reached")]
    assert (warning["mailbox"], warning["limit_mb"], limit_kib) == (mailbox.address, 1, 1024)
    assert abs(warning["used_mb"] * 1024 - used_kib) < 12  # the figure after message 2, not after 3
    assert 90 < warning["percentage"] < 92
