"""In imap mode the listener hands mail to Dovecot's LMTP (so Dovecot's quota applies), and the
owner reads it over IMAP with the mailbox's own password."""
import email.parser
import imaplib
import smtplib
import uuid

import pytest

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.mailboxes.services import mailbox_create
from mailcore.tests.smtp_sink import inbound_listener

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
