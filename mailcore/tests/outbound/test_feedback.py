"""Bounces and complaints: Postfix-style DSNs and ARF reports about our sends, read on their own and
delivered through the real listener over LMTP on loopback."""
import base64
import uuid
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import Message
from email.mime.message import MIMEMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText

import pytest
import time_machine
from django.utils import timezone

from mailcore.events.models import Event
from mailcore.mailboxes.models import ForwardingRule
from mailcore.sending.compose import build_message
from mailcore.outbound.feedback import FailedRecipient, Feedback, feedback_from
from mailcore.outbound.models import OutboundMessage
from testkit.factories import make_mailbox
from testkit.mail import events, inbox, lmtp_send  # lmtp_send: the null sender, as bounces come
from testkit.smtp_sink import inbound_listener

# The listener runs in other threads, so the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
SENT_ID = uuid.UUID("0b7e4c2a-5d1f-4a8e-9c3b-2f6d8e1a7b90")
SENT_RFC_ID = f"<{SENT_ID}@example.test>"
CRLF = policy.compat32.clone(linesep="\r\n")
USER_UNKNOWN = ("smtp; 550 5.1.1 <bob@elsewhere.test>: Recipient address rejected: User unknown in virtual "
                "mailbox table")


@pytest.fixture(autouse=True)
def embedded(plans, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path


@pytest.fixture
def listener():
    with inbound_listener() as port:
        yield port


def send(mailbox, *, to=("Bob@Elsewhere.test",), cc=("carol@elsewhere.test",), sandbox=False) -> OutboundMessage:
    return OutboundMessage.objects.create(
        message_id=SENT_ID, account=mailbox.account, mailbox=mailbox, status=OutboundMessage.Status.SENT,
        sandbox=sandbox,
        payload={"to": list(to), "cc": list(cc), "bcc": [], "reply_to": "", "subject": "Quarterly report",
                 "body_html": "", "body_text": "Numbers attached.", "attachments": [], "pending": []},
        due_at=NOW, sent_at=NOW, rfc_message_id=SENT_RFC_ID,
    )


@pytest.fixture
def sent(ann):
    return send(ann)


def as_sent(message: OutboundMessage) -> bytes:
    """The bytes our dispatch put on the wire for the send."""
    return build_message(mailbox=message.mailbox, payload=message.payload, message_id=str(message.message_id),
                         rfc_message_id=message.rfc_message_id, track_opens=False)


def original(rfc_message_id: str = SENT_RFC_ID) -> bytes:
    return (f"From: ann@example.test\r\nTo: Bob@Elsewhere.test\r\nSubject: Quarterly report\r\n"
            f"Message-ID: {rfc_message_id}\r\nDate: Wed, 04 Mar 2026 05:00:00 +0000\r\n\r\nNumbers attached.\r\n"
            ).encode()


def fields(*pairs: tuple[str, str]) -> Message:
    block = Message()
    for name, value in pairs:
        block[name] = value
    return block


def recipient_block(address: str, action: str = "failed", status: str | None = "5.1.1",
                    diagnostic: str | None = USER_UNKNOWN) -> Message:
    pairs = [("Final-Recipient", f"rfc822; {address}"), ("Original-Recipient", f"rfc822;{address}"),
             ("Action", action)]
    if status is not None:
        pairs.append(("Status", status))
    pairs.append(("Remote-MTA", "dns; mx.elsewhere.test"))
    if diagnostic is not None:
        pairs.append(("Diagnostic-Code", diagnostic))
    return fields(*pairs)


def postfix_dsn(returned: bytes | None, *recipients: Message, headers_only: bool = False,
                per_message: tuple[tuple[str, str], ...] = (), headers: dict | None = None) -> bytes:
    """A delivery status notification as Postfix's bounce daemon writes it."""
    report = MIMEMultipart("report", report_type="delivery-status")
    report["From"] = "MAILER-DAEMON@mx.example.test (Mail Delivery System)"
    report["To"] = "ann@example.test"
    report["Subject"] = "Undelivered Mail Returned to Sender"
    report["Date"] = "Wed, 04 Mar 2026 05:06:00 +0000"
    report["Message-ID"] = "<20260304050600.4F1A2C0123@mx.example.test>"
    report["Auto-Submitted"] = "auto-replied"
    for name, value in (headers or {}).items():
        report[name] = value
    notice = MIMEText("This is the mail system at host mx.example.test.\n\n"
                      "I'm sorry to have to inform you that your message could not\n"
                      "be delivered to one or more recipients.\n")
    notice["Content-Description"] = "Notification"
    report.attach(notice)
    status = Message()
    status["Content-Description"] = "Delivery report"
    status["Content-Type"] = "message/delivery-status"
    status.set_payload([
        fields(("Reporting-MTA", "dns; mx.example.test"), ("X-Postfix-Queue-ID", "4F1A2C0123"),
               ("X-Postfix-Sender", "rfc822; ann@example.test"),
               ("Arrival-Date", "Wed,  4 Mar 2026 05:05:59 +0000 (UTC)"), *per_message),
        *recipients,
    ])
    report.attach(status)
    if returned is not None:
        if headers_only:
            part = MIMEText(returned.split(b"\r\n\r\n")[0].decode() + "\r\n", "rfc822-headers")
            part["Content-Description"] = "Undelivered Message Headers"
        else:
            part = MIMEMessage(message_from_bytes(returned))
            part["Content-Description"] = "Undelivered Message"
        report.attach(part)
    return report.as_bytes(policy=CRLF)


def arf_report(returned: bytes, feedback_type: str = "abuse", rcpt_to: str | None = "<bob@elsewhere.test>") -> bytes:
    """An abuse report in the Abuse Reporting Format, as RFC 5965's example."""
    report = MIMEMultipart("report", report_type="feedback-report")
    report["From"] = "<abusedesk@elsewhere.test>"
    report["To"] = "<ann@example.test>"
    report["Subject"] = "FW: Quarterly report"
    report["Date"] = "Wed, 04 Mar 2026 05:06:00 +0000"
    report["Message-ID"] = "<arf-7d2b@elsewhere.test>"
    report.attach(MIMEText("This is an email abuse report for an email message received from IP\n"
                           "192.0.2.1 on Wed, 04 Mar 2026 05:00:01 +0000.\n"))
    pairs = [("Feedback-Type", feedback_type), ("User-Agent", "SomeGenerator/1.0"), ("Version", "1"),
             ("Original-Mail-From", "<ann@example.test>")]
    if rcpt_to:
        pairs.append(("Original-Rcpt-To", rcpt_to))
    pairs += [("Arrival-Date", "Wed, 04 Mar 2026 05:00:01 +0000"), ("Reporting-MTA", "dns; mail.elsewhere.test"),
              ("Source-IP", "192.0.2.1")]
    report.attach(MIMEMessage(fields(*pairs), "feedback-report"))
    report.attach(MIMEMessage(message_from_bytes(returned)))
    return report.as_bytes(policy=CRLF)


def deliver_at_now(port: int, raw: bytes, to: str = "ann@example.test", sender: str = "") -> None:
    with time_machine.travel(NOW, tick=False):
        assert lmtp_send(port, raw, [to], sender) == {}


# Reading a DSN


def test_a_postfix_dsn_reads_as_one_bounce_per_failed_recipient():
    raw = postfix_dsn(original(), recipient_block("bob@elsewhere.test"),
                      recipient_block("dave@elsewhere.test", action="delayed", status="4.4.1",
                                      diagnostic="smtp; 421 4.4.1 Try again later"),
                      recipient_block("carol@elsewhere.test", status="5.2.2 (mailbox full)",
                                      diagnostic="smtp; 552 5.2.2 Mailbox full"))
    assert feedback_from(raw) == Feedback("bounce", SENT_RFC_ID, failed=(
        FailedRecipient("bob@elsewhere.test", "bob@elsewhere.test", "5.1.1",
                        "550 5.1.1 <bob@elsewhere.test>: Recipient address rejected: User unknown in virtual "
                        "mailbox table"),
        FailedRecipient("carol@elsewhere.test", "carol@elsewhere.test", "5.2.2", "552 5.2.2 Mailbox full"),
    ))


def test_a_dsn_returning_only_the_headers_names_the_original_too():
    raw = postfix_dsn(original(), recipient_block("bob@elsewhere.test"), headers_only=True)
    assert b"Content-Type: text/rfc822-headers" in raw
    assert feedback_from(raw).original_message_id == SENT_RFC_ID


@pytest.mark.parametrize("where", ["per-message field", "report header"])
@pytest.mark.parametrize("name", ["Original-Message-ID", "X-Original-Message-ID"])
def test_without_the_returned_message_an_original_message_id_field_names_it(where, name):
    if where == "per-message field":
        raw = postfix_dsn(None, recipient_block("bob@elsewhere.test"), per_message=((name, SENT_RFC_ID),))
    else:
        raw = postfix_dsn(None, recipient_block("bob@elsewhere.test"), headers={name: SENT_RFC_ID})
    assert feedback_from(raw).original_message_id == SENT_RFC_ID


def test_a_missing_status_is_taken_from_the_diagnostic_code():
    raw = postfix_dsn(original(), recipient_block("bob@elsewhere.test", status=None,
                                                  diagnostic="smtp; 554 5.7.1 Message rejected as spam"))
    assert feedback_from(raw).failed == (
        FailedRecipient("bob@elsewhere.test", "bob@elsewhere.test", "5.7.1", "554 5.7.1 Message rejected as spam"),)


@pytest.mark.parametrize(("action", "status"), [
    ("delayed", "4.4.1"),  # still trying
    ("delivered", "2.0.0"),  # a success notification
    ("failed", "4.4.7"),  # the queue gave up after temporary failures: not a hard bounce
])
def test_only_a_failed_action_with_a_permanent_status_is_a_bounce(action, status):
    raw = postfix_dsn(original(), recipient_block("bob@elsewhere.test", action=action, status=status,
                                                  diagnostic=None))
    assert feedback_from(raw) is None


@pytest.mark.parametrize("encoded", [False, True])
def test_an_internationalised_dsn_reads_the_same_encoded_or_not(encoded):
    """RFC 6533: message/global-delivery-status with UTF-8 addresses, which may be base64-encoded."""
    raw = postfix_dsn(original(), recipient_block("bob@elsewhere.test"))
    raw = raw.replace(b"Content-Type: message/delivery-status", b"Content-Type: message/global-delivery-status")
    raw = raw.replace(b"Final-Recipient: rfc822; bob@", "Final-Recipient: utf-8; bøb@".encode())
    raw = raw.replace(b"Content-Type: message/rfc822", b"Content-Type: message/global")
    if encoded:
        start = raw.index(b"Reporting-MTA")
        end = raw.index(b"\r\n--=", start)
        raw = (raw[:start].replace(b"message/global-delivery-status",
                                   b"message/global-delivery-status\r\nContent-Transfer-Encoding: base64")
               + base64.encodebytes(raw[start:end]).replace(b"\n", b"\r\n") + raw[end:])
    assert feedback_from(raw) == Feedback("bounce", SENT_RFC_ID, failed=(
        FailedRecipient("bøb@elsewhere.test", "bob@elsewhere.test", "5.1.1",
                        "550 5.1.1 <bob@elsewhere.test>: Recipient address rejected: User unknown in virtual "
                        "mailbox table"),
    ))


def test_a_dsn_that_names_no_original_message_is_nothing():
    assert feedback_from(postfix_dsn(None, recipient_block("bob@elsewhere.test"))) is None


# Reading an ARF report


def test_an_arf_report_reads_as_a_complaint():
    assert feedback_from(arf_report(original())) == Feedback(
        "complaint", SENT_RFC_ID, feedback_type="abuse", user_agent="SomeGenerator/1.0",
        recipients=("bob@elsewhere.test",))


@pytest.mark.parametrize("feedback_type", ["auth-failure", "not-spam"])
def test_authentication_failure_and_not_spam_reports_are_not_complaints(feedback_type):
    assert feedback_from(arf_report(original(), feedback_type=feedback_type)) is None


def truncated_in_the_message_id(raw: bytes) -> bytes:
    return raw[:raw.index(b"Message-ID: <0b7e") + 20]


MALFORMED = {
    "report without parts": (
        b"Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\nno parts\r\n"),
    "report without a boundary": b"Content-Type: multipart/report; report-type=delivery-status\r\n\r\n--x\r\n\r\n",
    "status part of garbage": (
        b"Content-Type: multipart/report; report-type=delivery-status; boundary=x\r\n\r\n"
        b"--x\r\nContent-Type: message/delivery-status\r\n\r\n\xff\xfe:::\r\n : \r\n\r\n"
        b"Action failed\r\nFinal-Recipient\r\n--x\r\nContent-Type: message/rfc822\r\n\r\n--x--\r\n"
    ),
    "truncated": truncated_in_the_message_id(postfix_dsn(original(), recipient_block("bob@elsewhere.test"))),
    "feedback report without fields": (
        b"Content-Type: multipart/report; report-type=feedback-report; boundary=x\r\n\r\n"
        b"--x\r\nContent-Type: message/feedback-report\r\n\r\n--x\r\nContent-Type: text/rfc822-headers;"
        b" charset=x-klingon\r\n\r\nMessage-ID: " + SENT_RFC_ID.encode() + b"\r\n--x--\r\n"
    ),
    "not mail at all": b"\x00\x01\x02" * 100,
    "ordinary mail": original(),
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_reports_and_ordinary_mail_are_nothing(raw):
    assert feedback_from(raw) is None


# Delivered through the listener: email.bounced


def test_a_dsn_for_a_sent_message_emits_email_bounced_per_failed_recipient_and_lands_in_the_inbox(
        listener, ann, sent):
    raw = postfix_dsn(as_sent(sent), recipient_block("bob@elsewhere.test"),
                      recipient_block("carol@elsewhere.test", status="5.2.2",
                                      diagnostic="smtp; 552 5.2.2 Mailbox full"))
    deliver_at_now(listener, raw)
    assert events("email.bounced") == [
        {"message_id": str(SENT_ID), "mailbox": "ann@example.test", "recipient": "Bob@Elsewhere.test",
         "status": "5.1.1",
         "diagnostic": "550 5.1.1 <bob@elsewhere.test>: Recipient address rejected: User unknown in virtual "
                       "mailbox table",
         "bounced_at": "2026-03-04T05:06:07Z"},
        {"message_id": str(SENT_ID), "mailbox": "ann@example.test", "recipient": "carol@elsewhere.test",
         "status": "5.2.2", "diagnostic": "552 5.2.2 Mailbox full", "bounced_at": "2026-03-04T05:06:07Z"},
    ]
    assert Event.objects.get(name="email.bounced", data__recipient="Bob@Elsewhere.test").account == ann.account
    assert inbox(ann) == [b"Return-Path: <>\r\nDelivered-To: ann@example.test\r\n" + raw]
    assert [e["subject"] for e in events("email.received")] == ["Undelivered Mail Returned to Sender"]


def test_a_bounce_of_a_sandbox_send_carries_sandbox_true(listener, ann):
    send(ann, sandbox=True)
    deliver_at_now(listener, postfix_dsn(original(), recipient_block("bob@elsewhere.test")))
    [event] = Event.objects.filter(name="email.bounced")
    assert (event.sandbox, event.data["sandbox"], event.data["recipient"]) == (True, True, "Bob@Elsewhere.test")


def test_a_delayed_dsn_emits_nothing_but_lands_in_the_inbox(listener, ann, sent):
    raw = postfix_dsn(as_sent(sent), recipient_block("bob@elsewhere.test", action="delayed", status="4.4.1",
                                                     diagnostic="smtp; 421 4.4.1 Connection timed out"))
    deliver_at_now(listener, raw)
    assert events("email.bounced") == []
    assert len(inbox(ann)) == 1
    assert [e.name for e in Event.objects.all()] == ["email.received"]


def test_a_dsn_for_an_unknown_message_emits_nothing_but_lands_in_the_inbox(listener, ann, sent):
    raw = postfix_dsn(original("<someone-else@example.test>"), recipient_block("bob@elsewhere.test"))
    deliver_at_now(listener, raw)
    assert inbox(ann) == [b"Return-Path: <>\r\nDelivered-To: ann@example.test\r\n" + raw]
    assert [e.name for e in Event.objects.all()] == ["email.received"]


@pytest.mark.parametrize("raw", [MALFORMED["status part of garbage"], MALFORMED["truncated"],
                                 MALFORMED["feedback report without fields"]], ids=["garbage", "truncated", "arf"])
def test_a_malformed_report_lands_in_the_inbox_and_emits_nothing_else(listener, ann, sent, raw):
    deliver_at_now(listener, raw)
    assert len(inbox(ann)) == 1
    assert [e.name for e in Event.objects.all()] == ["email.received"]


def test_a_report_on_another_accounts_send_emits_nothing(listener, sent, charlie):
    stranger = make_mailbox(charlie.account, "charlie@other.test")
    deliver_at_now(listener, postfix_dsn(original(), recipient_block("bob@elsewhere.test")), to="charlie@other.test")
    deliver_at_now(listener, arf_report(original()), to="charlie@other.test", sender="abusedesk@elsewhere.test")
    assert len(inbox(stranger)) == 2
    assert sorted(e.name for e in Event.objects.all()) == ["email.received", "email.received"]


def test_a_copy_forwarded_to_another_mailbox_of_the_account_is_not_reported_twice(listener, ann, sent):
    make_mailbox(ann.account, "bob@example.test")
    ForwardingRule.objects.create(mailbox=ann, forward_to="bob@example.test", keep_copy=True, enabled=True,
                                  confirmed_at=timezone.now())
    deliver_at_now(listener, postfix_dsn(original(), recipient_block("bob@elsewhere.test")))
    assert [e["recipient"] for e in events("email.bounced")] == ["Bob@Elsewhere.test"]
    assert sorted(e["mailbox"] for e in events("email.received")) == ["ann@example.test", "bob@example.test"]


# Delivered through the listener: email.spam_reported


def test_an_arf_report_emits_email_spam_reported_and_lands_in_the_inbox(listener, ann, sent):
    raw = arf_report(as_sent(sent))
    deliver_at_now(listener, raw, sender="abusedesk@elsewhere.test")
    assert events("email.spam_reported") == [{
        "message_id": str(SENT_ID), "mailbox": "ann@example.test", "recipient": "Bob@Elsewhere.test",
        "feedback_type": "abuse", "user_agent": "SomeGenerator/1.0", "reported_at": "2026-03-04T05:06:07Z",
    }]
    assert inbox(ann) == [b"Return-Path: <abusedesk@elsewhere.test>\r\nDelivered-To: ann@example.test\r\n" + raw]


@pytest.mark.parametrize(("cc", "recipient"), [((), "Bob@Elsewhere.test"), (("carol@elsewhere.test",), None)])
def test_a_redacted_complaint_names_the_recipient_only_when_the_send_had_one(listener, ann, cc, recipient):
    send(ann, cc=cc)
    deliver_at_now(listener, arf_report(original(), feedback_type="fraud", rcpt_to=None))
    assert [(e["feedback_type"], e["recipient"]) for e in events("email.spam_reported")] == [("fraud", recipient)]


def test_an_authentication_failure_report_is_not_a_complaint(listener, ann, sent):
    deliver_at_now(listener, arf_report(original(), feedback_type="auth-failure"))
    assert [e.name for e in Event.objects.all()] == ["email.received"]
