"""The inbound listener end to end: real messages over LMTP (and SMTP) on loopback, into the
embedded store, with forwarding through a real SMTP sink."""
import hashlib
import re
import smtplib
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from mailcore.accounts.models import Plan
from mailcore.domains.services import domain_create
from mailcore.events.models import Event
from mailcore.mailboxes.models import Alias, ForwardingRule
from mailcore.mailboxes.services import mailbox_create
from mailcore.outbound.srs import srs_forward
from mailcore.store.factory import store_for
import testkit.mail
from testkit.mail import events, inbox
from testkit.smtp_sink import free_port, inbound_listener, smtp_sink

# The listener runs in other threads, so the data must be committed (the `plans` fixture puts the
# seeded plans back after each test's flush).
pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
TRACE = b"Return-Path: <bea@sender.test>\r\nDelivered-To: ann@example.test\r\n"


@pytest.fixture(autouse=True)
def embedded(plans, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path


@pytest.fixture
def domain(ann):
    """example.test, the verified domain of the standing mailbox ann@example.test."""
    return ann.domain


@pytest.fixture
def listener():
    with inbound_listener() as port:
        yield port


def message(*, subject="Lunch?", message_id="<m1@sender.test>", headers="", body="See you at noon.\r\n") -> bytes:
    return (
        f"From: Bea Sender <bea@sender.test>\r\nTo: ann@example.test\r\nSubject: {subject}\r\n"
        f"Message-ID: {message_id}\r\nDate: Wed, 04 Mar 2026 05:00:00 +0000\r\n{headers}\r\n{body}"
    ).encode()


def lmtp_send(port: int, raw: bytes, to: list[str], sender: str = "bea@sender.test") -> dict:
    return testkit.mail.lmtp_send(port, raw, to, sender)


def tiny_plan(storage_mb: int) -> Plan:
    return Plan.objects.create(code=f"tiny{storage_mb}", name="Tiny", rank=99, sends_per_day=1, sends_per_hour=1,
                               storage_mb=storage_mb, attachment_max_mb=1)


def live_rule(mailbox, forward_to: str, *, keep_copy: bool, enabled: bool = True, confirmed: bool = True):
    return ForwardingRule.objects.create(mailbox=mailbox, forward_to=forward_to, keep_copy=keep_copy,
                                         enabled=enabled, confirmed_at=timezone.now() if confirmed else None)


# Recipients


def test_an_unknown_recipient_is_refused_at_rcpt_with_550_and_nothing_is_stored(listener, ann):
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        lmtp_send(listener, message(), ["nobody@example.test"])
    assert refused.value.recipients == {"nobody@example.test": (550, b"5.1.1 No such user here")}
    assert inbox(ann) == []
    assert Event.objects.count() == 0


def test_a_disabled_mailbox_is_refused_with_550_5_2_1(listener, ann):
    ann.is_active = False
    ann.save()
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        lmtp_send(listener, message(), ["ann@example.test"])
    assert refused.value.recipients == {"ann@example.test": (550, b"5.2.1 Mailbox disabled, not accepting messages")}
    assert inbox(ann) == []
    assert Event.objects.count() == 0


@pytest.mark.parametrize("address", ["someone@not-hosted.test", "ann@pending.example.test"])
def test_mail_for_a_domain_not_hosted_or_not_verified_is_refused_as_relaying(listener, ann, alice, address):
    domain_create(account=alice.account, name="pending.example.test")
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        lmtp_send(listener, message(), [address])
    assert refused.value.recipients == {address: (550, b"5.7.1 Relaying denied: domain not hosted here")}
    assert Event.objects.count() == 0


# Delivery


def test_a_delivered_message_reads_back_byte_for_byte_after_the_trace_headers(listener, ann):
    raw = message(body="Line one\r\n.leading dot\r\n\r\nÜnïcödé ✓\r\n")
    assert lmtp_send(listener, raw, ["ann@example.test"]) == {}
    assert inbox(ann) == [TRACE + raw]


def test_mail_to_an_alias_lands_in_the_aliased_mailbox_whatever_the_case(listener, ann):
    Alias.objects.create(mailbox=ann, address="sales@example.test")
    lmtp_send(listener, message(), ["Sales@Example.TEST"])
    assert inbox(ann) == [TRACE + message()]
    assert events("email.received")[0]["mailbox"] == "ann@example.test"


def test_a_plus_subaddress_lands_in_the_mailbox(listener, ann):
    lmtp_send(listener, message(), ["ann+newsletters@example.test"])
    assert inbox(ann) == [TRACE + message()]


def test_a_bounce_with_the_null_sender_is_delivered(listener, ann):
    lmtp_send(listener, message(), ["ann@example.test"], sender="")
    assert inbox(ann) == [b"Return-Path: <>\r\nDelivered-To: ann@example.test\r\n" + message()]


def test_mail_without_a_message_id_gets_one_derived_from_its_content(listener, ann, settings):
    raw = b"From: bea@sender.test\r\nSubject: No id\r\n\r\nHello\r\n"
    lmtp_send(listener, raw, ["ann@example.test"])
    message_id = f"<{hashlib.sha256(raw).hexdigest()[:32]}@{settings.MAIL_HOST}>"
    assert inbox(ann) == [TRACE + f"Message-ID: {message_id}\r\n".encode() + raw]
    assert events("email.received")[0]["message_id"] == message_id


def test_lmtp_answers_once_per_recipient_after_data(listener, ann, domain):
    full = mailbox_create(domain=domain, local_part="full", password="mailbox-pass-1", plan=tiny_plan(0))
    with smtplib.LMTP("127.0.0.1", listener) as client:
        client.ehlo()
        client.mail("bea@sender.test")
        client.rcpt("ann@example.test")
        client.rcpt("full@example.test")
        first = client.data(message())
        second = client.getreply()
    assert (first, second) == ((250, b"2.0.0 Delivered"), (552, b"5.2.2 Mailbox full"))
    assert len(inbox(ann)) == 1
    assert inbox(full) == []


def test_smtp_takes_one_recipient_per_transaction(listener, ann, domain):
    mailbox_create(domain=domain, local_part="bob", password="mailbox-pass-1")
    with smtplib.SMTP("127.0.0.1", listener) as client:
        client.ehlo()
        client.mail("bea@sender.test")
        assert client.rcpt("ann@example.test") == (250, b"2.1.5 Recipient ok")
        assert client.rcpt("bob@example.test") == (
            452, b"4.5.3 One recipient per transaction here, send the others separately")
        assert client.data(message()) == (250, b"2.0.0 Delivered")
    assert inbox(ann) == [TRACE + message()]


def test_when_dovecot_is_unreachable_the_sender_is_told_to_retry_and_nothing_is_announced(listener, ann, settings):
    settings.MAIL_STORE = "imap"
    settings.DOVECOT_LMTP = f"127.0.0.1:{free_port()}"
    with pytest.raises(smtplib.SMTPDataError) as deferred:
        lmtp_send(listener, message(), ["ann@example.test"])
    assert (deferred.value.smtp_code, deferred.value.smtp_error) == (
        451, b"4.3.0 Mail store unavailable (ConnectionRefusedError), try again later")
    assert Event.objects.count() == 0


def test_a_message_over_the_size_limit_is_refused_and_not_stored(ann):
    with inbound_listener(max_message_bytes=1000) as port:
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            lmtp_send(port, message(body="x" * 2000 + "\r\n"), ["ann@example.test"])
    assert refused.value.smtp_code == 552
    assert inbox(ann) == []


def test_malformed_mail_is_still_delivered_and_announced(listener, ann):
    raw = (b"From: =?x-unknown?Q?broken <<<\r\nSubject: =?utf-8?B?not base64!?=\r\nMessage-ID: <bad@x>\r\n"
           b"Content-Type: text/plain; charset=x-klingon\r\n\r\nHello \xff\xfe world\r\n")
    lmtp_send(listener, raw, ["ann@example.test"])
    assert inbox(ann) == [TRACE + raw]
    data = events("email.received")[0]
    assert (data["message_id"], data["preview"], data["size_bytes"]) == (
        "<bad@x>", "Hello \ufffd\ufffd world", len(TRACE + raw))


# email.received


def test_email_received_size_is_the_size_the_inbox_lists(listener, ann, alice):
    raw = message(body="line one\nline two, LF only\n").replace(b"\r\n", b"\n")
    lmtp_send(listener, raw, ["ann@example.test"])
    client = APIClient()
    client.force_login(alice)
    [summary] = client.get("/inbox", {"email": "ann@example.test"}).json()["messages"]
    assert events("email.received")[0]["size_bytes"] == summary["size"] == len(inbox(ann)[0])


def test_email_received_carries_the_spec_fields(listener, ann):
    raw = message(headers="Content-Type: text/html; charset=utf-8\r\n",
                  body="<html><body><p>Hi&nbsp;Ann,</p><p>see <b>you</b></p><script>x()</script></body></html>\r\n")
    with time_machine.travel(NOW, tick=False):
        lmtp_send(listener, raw, ["ann@example.test"])
    assert events("email.received") == [{
        "message_id": "<m1@sender.test>",
        "mailbox": "ann@example.test",
        "from": "Bea Sender <bea@sender.test>",
        "subject": "Lunch?",
        "received_at": "2026-03-04T05:06:07Z",
        "thread_id": hashlib.sha256(b"lunch?").hexdigest()[:16],
        "in_reply_to": None,
        "references": "",
        "is_reply": False,
        "preview": "Hi Ann, see you",
        "has_attachments": False,
        "size_bytes": len(TRACE + raw),  # the stored copy, as the inbox lists it
        "authentication": None,  # no Authentication-Results of ours: nothing screened it
    }]


def test_a_reply_chain_shares_one_thread_id(listener, ann):
    lmtp_send(listener, message(message_id="<a@sender.test>"), ["ann@example.test"])
    lmtp_send(listener, message(subject="Re: Lunch?", message_id="<b@sender.test>",
                                headers="In-Reply-To: <a@sender.test>\r\n"), ["ann@example.test"])
    lmtp_send(listener, message(subject="RE: Re: Lunch?", message_id="<c@sender.test>",
                                headers="In-Reply-To: <b@sender.test>\r\n"
                                        "References: <a@sender.test>\r\n <b@sender.test>\r\n"),
              ["ann@example.test"])
    thread = hashlib.sha256(b"lunch?").hexdigest()[:16]  # the normalised subject of the first message
    assert [(e["thread_id"], e["is_reply"], e["in_reply_to"], e["references"]) for e in events("email.received")] == [
        (thread, False, None, ""),
        (thread, True, "<a@sender.test>", ""),
        (thread, True, "<b@sender.test>", "<a@sender.test> <b@sender.test>"),
    ]


def test_an_attachment_is_reported(listener, ann):
    raw = message(headers='MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n',
                  body='--b\r\nContent-Type: text/plain\r\n\r\nThe report.\r\n--b\r\n'
                       'Content-Type: application/pdf\r\nContent-Disposition: attachment; filename="r.pdf"\r\n'
                       'Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n--b--\r\n')
    lmtp_send(listener, raw, ["ann@example.test"])
    data = events("email.received")[0]
    assert (data["has_attachments"], data["preview"]) == (True, "The report.")


# Quota


def test_quota_reached_fires_once_when_storage_passes_90_percent(listener, ann):
    ann.plan = tiny_plan(1)
    ann.save()
    half = "x" * 998 + "\r\n"
    lmtp_send(listener, message(message_id="<q1@s>", body=half * 480), ["ann@example.test"])  # ~46%
    assert events("mailbox.quota_reached") == []
    lmtp_send(listener, message(message_id="<q2@s>", body=half * 470), ["ann@example.test"])  # ~91%
    used = store_for(ann).storage_used()
    assert events("mailbox.quota_reached") == [{
        "mailbox": "ann@example.test", "used_mb": round(used / 1048576, 2), "limit_mb": 1,
        "percentage": round(used * 100 / 1048576, 1),
    }]
    lmtp_send(listener, message(message_id="<q3@s>", body=half * 10), ["ann@example.test"])  # ~92%, no second event
    with pytest.raises(smtplib.SMTPDataError) as full:
        lmtp_send(listener, message(message_id="<q4@s>", body=half * 100), ["ann@example.test"])
    assert (full.value.smtp_code, full.value.smtp_error) == (552, b"5.2.2 Mailbox full")
    assert len(events("mailbox.quota_reached")) == 1
    assert len(inbox(ann)) == 3


# Forwarding


def test_a_live_rule_with_keep_copy_forwards_the_original_and_keeps_it(listener, ann, relay):
    live_rule(ann, "ann@elsewhere.test", keep_copy=True)
    with time_machine.travel(NOW, tick=False):
        lmtp_send(listener, message(), ["ann@example.test"])
        srs = srs_forward("bea@sender.test", "example.test")
    [forwarded] = relay.messages
    assert (forwarded.mail_from, forwarded.rcpt_tos) == (srs, ["ann@elsewhere.test"])
    assert forwarded.content == b"Delivered-To: ann@example.test\r\n" + message()
    assert inbox(ann) == [TRACE + message()]
    assert events("email.forwarded") == [{
        "mailbox": "ann@example.test", "forward_to": "ann@elsewhere.test",
        "message_id": "<m1@sender.test>", "forwarded_at": "2026-03-04T05:06:07Z",
    }]
    assert len(events("email.received")) == 1


def test_a_live_rule_without_keep_copy_forwards_and_stores_nothing(listener, ann, relay):
    live_rule(ann, "ann@elsewhere.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"])
    assert [m.rcpt_tos for m in relay.messages] == [["ann@elsewhere.test"]]
    assert inbox(ann) == []
    assert events("email.received") == []
    assert len(events("email.forwarded")) == 1


def test_one_rule_keeping_a_copy_is_enough_to_keep_it(listener, ann, relay):
    live_rule(ann, "one@elsewhere.test", keep_copy=False)
    live_rule(ann, "two@elsewhere.test", keep_copy=True)
    lmtp_send(listener, message(), ["ann@example.test"])
    assert [m.rcpt_tos for m in relay.messages] == [["one@elsewhere.test", "two@elsewhere.test"]]
    assert inbox(ann) == [TRACE + message()]


@pytest.mark.parametrize(("enabled", "confirmed"), [(True, False), (False, True)])
def test_a_rule_forwards_only_while_enabled_and_confirmed(listener, ann, relay, enabled, confirmed):
    live_rule(ann, "ann@elsewhere.test", keep_copy=False, enabled=enabled, confirmed=confirmed)
    lmtp_send(listener, message(), ["ann@example.test"])
    assert relay.messages == []
    assert inbox(ann) == [TRACE + message()]
    assert events("email.forwarded") == []


def test_when_the_relay_is_down_the_sender_is_told_to_retry_and_nothing_is_stored(listener, ann, settings):
    settings.SMTP_URL = f"smtp://127.0.0.1:{free_port()}"
    live_rule(ann, "ann@elsewhere.test", keep_copy=True)
    with pytest.raises(smtplib.SMTPDataError) as deferred:
        lmtp_send(listener, message(), ["ann@example.test"])
    assert (deferred.value.smtp_code, deferred.value.smtp_error) == (
        451, b"4.4.1 Forwarding relay unavailable, try again later")
    assert inbox(ann) == []
    assert Event.objects.count() == 0


def test_when_every_forward_is_refused_the_copy_is_kept_anyway(listener, ann, settings):
    with smtp_sink(refuse={"gone@elsewhere.test": "550 5.1.1 No such user"}) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        live_rule(ann, "gone@elsewhere.test", keep_copy=False)
        lmtp_send(listener, message(), ["ann@example.test"])
    assert sink.messages == []
    assert inbox(ann) == [TRACE + message()]
    assert events("email.forwarded") == []


def test_without_a_relay_forwards_to_other_domains_go_to_the_local_outbox(listener, ann, tmp_path):
    live_rule(ann, "ann@elsewhere.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"])
    [path] = (tmp_path / "outbox").iterdir()
    assert re.fullmatch(r"\d{8}T\d{12}Z-[0-9a-f]{32}\.eml", path.name)
    srs = srs_forward("bea@sender.test", "example.test").encode()
    assert path.read_bytes() == (
        b"X-Outbox-Envelope-From: <" + srs + b">\r\nX-Outbox-Envelope-To: <ann@elsewhere.test>\r\n"
        b"Delivered-To: ann@example.test\r\n" + message()
    )
    assert inbox(ann) == []
    assert len(events("email.forwarded")) == 1


def test_without_a_relay_forwards_to_hosted_mailboxes_are_delivered_locally(listener, ann, domain):
    bob = mailbox_create(domain=domain, local_part="bob", password="mailbox-pass-1")
    live_rule(ann, "bob@example.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"])
    assert inbox(ann) == []
    srs = srs_forward("bea@sender.test", "example.test").encode()
    assert inbox(bob) == [
        b"Return-Path: <" + srs + b">\r\nDelivered-To: bob@example.test\r\nDelivered-To: ann@example.test\r\n"
        + message()
    ]
    assert [e["mailbox"] for e in events("email.received")] == ["bob@example.test"]


def test_a_forwarding_loop_stops_and_the_mail_lands_once(listener, ann, domain):
    bob = mailbox_create(domain=domain, local_part="bob", password="mailbox-pass-1")
    live_rule(ann, "bob@example.test", keep_copy=False)
    live_rule(bob, "ann@example.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"])
    assert inbox(ann) == []
    assert len(inbox(bob)) == 1
    assert [(e["mailbox"], e["forward_to"]) for e in events("email.forwarded")] == [
        ("ann@example.test", "bob@example.test")]
    assert [e["mailbox"] for e in events("email.received")] == ["bob@example.test"]


# Forwarding: SRS (the envelope sender of a forward, and bounces back to the original sender)

DSN = (b"From: Mail Delivery System <mailer-daemon@mx.elsewhere.test>\r\nTo: {to}\r\n"
       b"Subject: Undelivered Mail Returned to Sender\r\nMIME-Version: 1.0\r\n"
       b'Content-Type: multipart/report; report-type=delivery-status; boundary="r"\r\n\r\n'
       b"--r\r\nContent-Type: text/plain\r\n\r\nann@elsewhere.test: no such user.\r\n"
       b"--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.elsewhere.test\r\n\r\n"
       b"Final-Recipient: rfc822; ann@elsewhere.test\r\nAction: failed\r\nStatus: 5.1.1\r\n--r--\r\n")


def test_a_bounce_to_a_forwards_srs_address_goes_back_to_the_original_sender_with_the_null_sender(
        listener, ann, relay):
    live_rule(ann, "ann@elsewhere.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"])
    [forwarded] = relay.messages
    bounce = DSN.replace(b"{to}", forwarded.mail_from.encode())

    replies = lmtp_send(listener, bounce, [forwarded.mail_from])

    assert replies == {}
    [returned] = relay.messages[1:]
    assert (returned.mail_from, returned.rcpt_tos, returned.content) == ("<>", ["bea@sender.test"], bounce)
    assert inbox(ann) == []
    assert [event.name for event in Event.objects.all()] == ["email.forwarded"]


def test_a_forward_of_a_bounce_keeps_the_null_sender(listener, ann, relay):
    live_rule(ann, "ann@elsewhere.test", keep_copy=False)
    lmtp_send(listener, message(), ["ann@example.test"], sender="")
    assert [(m.mail_from, m.rcpt_tos) for m in relay.messages] == [("<>", ["ann@elsewhere.test"])]


def test_a_forged_or_expired_srs_address_is_refused_at_rcpt_and_nothing_is_sent(listener, ann, relay):
    with time_machine.travel(NOW - timedelta(days=22), tick=False):
        expired = srs_forward("bea@sender.test", "example.test")
    genuine = srs_forward("bea@sender.test", "example.test")
    forged = genuine.replace("=bea@", "=ceo@")
    for address in (forged, expired, "SRS0=abcd=AA=sender.test=bea@example.test"):
        with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
            lmtp_send(listener, DSN, [address])
        assert refused.value.recipients == {address: (550, b"5.1.1 Unknown or expired forwarding return address")}
    assert relay.messages == []


def test_an_srs_address_on_a_domain_not_hosted_here_is_refused_as_relaying(listener, ann, relay):
    address = srs_forward("bea@sender.test", "elsewhere.test")
    with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
        lmtp_send(listener, DSN, [address])
    assert refused.value.recipients == {address: (550, b"5.7.1 Relaying denied: domain not hosted here")}
    assert relay.messages == []


def test_when_the_original_sender_refuses_the_bounce_its_refusal_is_the_answer(listener, ann, settings):
    address = srs_forward("gone@sender.test", "example.test")
    with smtp_sink(refuse={"gone@sender.test": "550 5.1.1 No such user"}) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        with pytest.raises(smtplib.SMTPDataError) as refused:
            lmtp_send(listener, DSN, [address])
    assert (refused.value.smtp_code, refused.value.smtp_error) == (550, b"5.1.1 No such user")
    assert sink.messages == []
