"""A burst of mail through our listener into Dovecot: every message stored once per recipient, one
event each, over a few kept LMTP sessions with Dovecot rather than one per message."""
import imaplib
import re
import smtplib
import uuid

import pytest

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.inbound.server import DELIVERY_THREADS
from mailcore.mailboxes.services import mailbox_create
from testkit.smtp_sink import inbound_listener

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = 12


def inbox_count(dovecot, address: str) -> int:
    imap = imaplib.IMAP4(dovecot.host, dovecot.imap_port)
    try:
        imap.login(f"{address}*{dovecot.master_user}", dovecot.master_password)
        _, data = imap.status("INBOX", "(MESSAGES)")
    finally:
        imap.logout()
    return int(re.search(rb"MESSAGES (\d+)", data[0]).group(1))


def lmtp_connections(dovecot) -> int:
    return len(re.findall(r"lmtp\(\d+\): Info: Connect from", dovecot.log()))


def test_a_burst_lands_in_dovecot_once_per_recipient_over_kept_lmtp_sessions(plans, imap_settings, settings,
                                                                               tmp_path):
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    ann = mailbox_create(domain=domain, local_part="ann", password="ann password 1")
    bob = mailbox_create(domain=domain, local_part="bob", password="bob password 1")
    connections_before = lmtp_connections(imap_settings)

    with inbound_listener() as port, smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo()  # LHLO
        for number in range(MESSAGES):
            raw = (f"From: Bea <bea@sender.test>\r\nTo: {ann.address}, {bob.address}\r\nSubject: Burst {number}\r\n"
                   f"Message-ID: <burst{number}@sender.test>\r\n\r\nMessage {number}.\r\n").encode()
            client.mail("bea@sender.test")
            assert client.rcpt(ann.address)[0] == client.rcpt(bob.address)[0] == 250
            assert client.data(raw)[0] == 250
            assert client.getreply()[0] == 250  # LMTP: the second recipient's reply

    assert (inbox_count(imap_settings, ann.address), inbox_count(imap_settings, bob.address)) == (MESSAGES, MESSAGES)
    received = sorted((e.data["mailbox"], e.data["message_id"]) for e in Event.objects.filter(name="email.received"))
    assert received == sorted((box.address, f"<burst{number}@sender.test>")
                              for box in (ann, bob) for number in range(MESSAGES))
    opened = lmtp_connections(imap_settings) - connections_before
    assert 1 <= opened <= DELIVERY_THREADS < 2 * MESSAGES, imap_settings.log()[-3000:]
