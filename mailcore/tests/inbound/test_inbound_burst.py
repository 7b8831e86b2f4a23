"""A burst of mail through our listener into Dovecot: every message stored once per recipient, one
event each, over a few kept LMTP sessions with Dovecot rather than one per message, and one LMTP
transaction per message whatever the number of its recipients."""
import imaplib
import os
import re
import signal
import smtplib
import uuid

import pytest
from django.utils import timezone

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.events.models import Event
from mailcore.inbound.server import DELIVERY_THREADS
from mailcore.mailboxes.models import ForwardingRule
from mailcore.mailboxes.services import mailbox_create
from mailcore.store.factory import store_for
from mailcore.store.lmtp import lmtp_close
from testkit.dovecot import message
from testkit.smtp_sink import free_port, inbound_listener

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


@pytest.fixture
def domain(plans, imap_settings, settings, tmp_path):
    """A verified domain of its own (mail in Dovecot outlives the test database), no relay."""
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    return domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))


def test_a_burst_lands_in_dovecot_once_per_recipient_over_kept_lmtp_sessions(domain, imap_settings):
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


def transactions(dovecot, message_id: str) -> set[str]:
    """Dovecot's LMTP transaction ids in the lines about this message (each recipient's adds ":R<n>";
    Pigeonhole logs them, as every delivery runs junk-verdict.sieve first)."""
    return set(re.findall(rf"lmtp\([^)]*\)<\d+><([^>:]+)[^>]*>: Info: (?:sieve: )?msgid={re.escape(message_id)}",
                          dovecot.log()))


def test_a_message_to_three_mailboxes_is_one_lmtp_transaction_with_a_reply_for_each(domain, imap_settings):
    tiny = Plan.objects.create(code="tiny", name="Tiny", rank=9, sends_per_day=1, sends_per_hour=1, storage_mb=1,
                               attachment_max_mb=1)
    ann, bob = (mailbox_create(domain=domain, local_part=name, password="box password 1") for name in ("ann", "bob"))
    full = mailbox_create(domain=domain, local_part="full", password="full password 1", plan=tiny)
    store_for(full).append("INBOX", message("nearly full", pad_to=1000 * 1024))
    raw = message("To all three", body="a line of the body\r\n" * 5000)  # 100 KB
    message_id = re.search(rb"Message-ID: (<[^>]+>)", raw).group(1).decode()

    with inbound_listener() as port, smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo()  # LHLO
        client.mail("bea@sender.test")
        assert [client.rcpt(box.address)[0] for box in (ann, bob, full)] == [250, 250, 250]
        replies = [client.data(raw), client.getreply(), client.getreply()]

    assert replies[:2] == [(250, b"2.0.0 Delivered")] * 2
    assert replies[2][0] == 552 and b"Quota exceeded" in replies[2][1]  # Dovecot's reply, for that mailbox only
    assert [inbox_count(imap_settings, box.address) for box in (ann, bob, full)] == [1, 1, 1]
    assert len(transactions(imap_settings, message_id)) == 1, imap_settings.log()[-3000:]
    assert sorted(e.data["mailbox"] for e in Event.objects.filter(name="email.received")) == sorted(
        [ann.address, bob.address])


def test_a_kept_lmtp_session_that_dovecot_ended_is_replaced(plans, imap_settings, settings):
    mailbox = mailbox_create(domain=domain_create(account=Account.objects.create(
        name="Owner", plan=Plan.objects.get(code="premium")), name=f"d{uuid.uuid4().hex[:10]}.test"),
        local_part="owner", password="owner password 1")
    store = store_for(mailbox)
    lmtp_close()  # this thread's session starts with this test
    try:
        store.deliver(message("first"), recipient=mailbox.address, envelope_from="bea@sender.test")
        [serving] = re.findall(r"lmtp\((\d+)\): Info: Connect from", imap_settings.log())[-1:]
        os.kill(int(serving), signal.SIGKILL)  # Dovecot's end of the session this thread keeps
        connections_before = lmtp_connections(imap_settings)
        store.deliver(message("second"), recipient=mailbox.address, envelope_from="bea@sender.test")
    finally:
        lmtp_close()

    assert inbox_count(imap_settings, mailbox.address) == 2
    assert lmtp_connections(imap_settings) == connections_before + 1


def test_when_dovecot_cannot_take_the_copies_a_recipient_who_only_forwards_still_answers_250(domain, settings,
                                                                                            tmp_path):
    """Its forward is already out: a 451 would make the sender retry and forward it twice."""
    ann, bob = (mailbox_create(domain=domain, local_part=name, password="box password 1") for name in ("ann", "bob"))
    ForwardingRule.objects.create(mailbox=ann, forward_to="ann@elsewhere.test", keep_copy=False, enabled=True,
                                  confirmed_at=timezone.now())
    settings.DOVECOT_LMTP = f"127.0.0.1:{free_port()}"  # nothing listens: the copies cannot be stored
    raw = message("Forward me")

    with inbound_listener() as port, smtplib.LMTP("127.0.0.1", port) as client:
        client.ehlo()
        client.mail("bea@sender.test")
        assert client.rcpt(ann.address)[0] == client.rcpt(bob.address)[0] == 250
        replies = [client.data(raw)[0], client.getreply()[0]]  # LMTP: one reply per recipient, in order

    assert replies == [250, 451]
    [forwarded] = (tmp_path / "outbox").iterdir()  # no relay: the forward went to the local outbox, once
    assert b"X-Outbox-Envelope-To: <ann@elsewhere.test>" in forwarded.read_bytes()
