"""The submission intake as Postfix's port 587 talks to it (smtpd_proxy_filter), driven here by a
real SMTP client: what it accepts becomes a send like an API send, what it refuses is a reply the
owner's mail client shows, and a refusal stores nothing. Postfix in front of it:
mailcore/tests/outbound/test_postfix.py."""
import smtplib

import dkim
import pytest

from mailcore.accounts.models import Plan
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.mailboxes.aliases import alias_create
from mailcore.mailboxes.models import Alias
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for
from mailcore.usage.models import MailboxHourlySends
from testkit.factories import client_message, make_domain
from testkit.smtp_sink import submission_intake

# Transactional: the intake's threads read what the test wrote (and the plans are re-created after
# each flush). `ann` is the shared fixture: a mailbox in the embedded store.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("plans")]


@pytest.fixture
def intake():
    with submission_intake() as port:
        yield port


def submit(port: int, envelope_from: str, raw: bytes, to: tuple[str, ...] = ("reader@elsewhere.test",)) -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
        client.sendmail(envelope_from, list(to), raw)


def test_the_clients_message_id_is_kept_and_an_alias_may_be_the_sender(intake, ann, relay):
    Alias.objects.create(mailbox=ann, address="sales@example.test")
    submit(intake, "sales@example.test", client_message("Sales <sales@example.test>", "Quote",
                                                        headers="Message-ID: <thread-1@laptop.test>\r\n"))

    message = OutboundMessage.objects.get()
    assert message.mailbox == ann and message.rfc_message_id == "<thread-1@laptop.test>"
    assert outbound_dispatch_due() == 1
    assert relay.messages[0].mail_from == "ann@example.test"  # bounces come back to the mailbox
    assert b"Message-ID: <thread-1@laptop.test>" in relay.messages[0].content
    assert b"DKIM-Signature:" in relay.messages[0].content
    assert [m.subject for m in store_for(ann).list("Sent").messages] == ["Quote"]


@pytest.mark.parametrize("envelope_from, sender, expected", [
    ("nobody@example.test", "nobody@example.test", (553, b"not a mailbox hosted here")),
    ("ann@example.test", "boss@example.test", (550, b"own address")),
    ("ann@example.test", "ann@example.test, boss@example.test", (550, b"own address")),
    ("ann@example.test", "not an address", (550, b"own address")),
])
def test_a_sender_that_is_not_the_mailbox_is_refused(intake, ann, envelope_from, sender, expected):
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(intake, envelope_from, client_message(sender))
    assert refused.value.smtp_code == expected[0] and expected[1] in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_a_suspended_mailbox_is_refused(intake, ann):
    ann.is_active = False
    ann.save()
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(intake, ann.address, client_message(ann.address))
    assert refused.value.smtp_code == 550 and b"suspended" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_a_message_over_the_plans_attachment_cap_is_refused(intake, ann):
    ann.plan = Plan.objects.create(code="small", name="Small", rank=9, sends_per_day=10, sends_per_hour=10,
                                   storage_mb=100, attachment_max_mb=2)
    ann.save()
    cap = 2 * 1024 * 1024
    with pytest.raises(smtplib.SMTPDataError) as refused:
        lines = (cap * 4 // 3 + 2 * 1024 * 1024) // 78  # past the cap in base64, with room for the rest
        submit(intake, ann.address, client_message(ann.address, body=("x" * 76 + "\r\n") * lines))
    assert refused.value.smtp_code == 552 and b"5.3.4" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_too_many_recipients_are_refused_at_rcpt(intake, ann):
    recipients = tuple(f"r{n}@elsewhere.test" for n in range(51))
    with smtplib.SMTP("127.0.0.1", intake, timeout=30) as client:
        client.ehlo("postfix.test")
        client.mail(ann.address)
        codes = [client.rcpt(recipient)[0] for recipient in recipients]
    assert codes == [250] * 50 + [452]


def test_mail_from_an_alias_on_another_domain_is_signed_by_that_domain(intake, ann, alice, relay):
    make_domain(alice.account, "brand.test")
    alias_create(mailbox=ann, alias_address="hello@brand.test")
    submit(intake, "hello@brand.test", client_message("Brand <hello@brand.test>", "From the brand"))

    assert outbound_dispatch_due() == 1
    content = relay.messages[0].content
    record = dkim_public_record(dkim_key_for("brand.test")).encode()
    assert b"d=brand.test" in content and dkim.verify(content, dnsfunc=lambda name, timeout=5: record)


def test_a_subaddress_of_the_mailbox_may_send(intake, ann):
    submit(intake, "ann+news@example.test", client_message("ann+news@example.test", "Newsletter"))
    assert OutboundMessage.objects.get().mailbox == ann


def test_hidden_recipients_are_kept_off_the_message_and_on_the_send(intake, ann, relay):
    submit(intake, ann.address, client_message(ann.address, headers="Bcc: boss@elsewhere.test\r\n"
                                               "Resent-Bcc:\r\n audit@elsewhere.test\r\nMessage-ID: \r\n"),
           to=("reader@elsewhere.test", "boss@elsewhere.test"))

    message = OutboundMessage.objects.get()
    assert message.payload["bcc"] == ["boss@elsewhere.test"] and message.payload["to"] == ["reader@elsewhere.test"]
    assert outbound_dispatch_due() == 1
    content = relay.messages[0].content
    assert b"Bcc" not in content and b"audit@" not in content
    assert content.count(b"Message-ID:") == 1 and message.rfc_message_id.encode() in content  # a blank one is replaced


def test_a_message_that_cannot_be_signed_is_refused_at_once(intake, ann):
    raw = client_message(ann.address).replace(b"MIME-Version", b"this is no header\r\nMIME-Version")
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(intake, ann.address, raw)
    assert refused.value.smtp_code == 554 and b"5.6.0" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_past_the_hourly_limit_the_client_is_told_to_try_again_later(intake, ann):
    from django.utils import timezone

    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    MailboxHourlySends.objects.create(mailbox=ann, hour=hour, sends=ann.effective_plan.sends_per_hour)
    with pytest.raises(smtplib.SMTPDataError) as refused:
        submit(intake, ann.address, client_message(ann.address))
    assert refused.value.smtp_code == 451 and b"hourly limit" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_added_fields_go_below_the_trace_postfix_prepended(intake, ann, relay):
    received = b"Received: from laptop.home.test (unknown [192.0.2.7])\r\n\tby mail.mailwell.test (Postfix)\r\n"
    submit(intake, ann.address, received + client_message(ann.address, "Traced"))

    assert outbound_dispatch_due() == 1
    content = relay.messages[0].content
    assert content.index(b"Received: from laptop") < content.index(b"Date: ") < content.index(b"From: ")
    assert content.index(b"Received: from laptop") < content.index(b"Message-ID: ")


def test_a_send_the_relay_refuses_comes_back_to_the_inbox_as_a_bounce_with_the_original(intake, ann, settings):
    from email import message_from_bytes, policy

    from testkit.smtp_sink import smtp_sink

    refusal = "550 5.1.1 <gone@elsewhere.test>: User unknown"
    with smtp_sink(refuse={"gone@elsewhere.test": refusal}) as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        submit(intake, "ann@example.test", client_message("Ann <ann@example.test>", "Quote",
                                                          headers="Message-ID: <q-1@laptop.test>\r\n"),
               to=("gone@elsewhere.test",))
        assert outbound_dispatch_due() == 1
    assert sink.messages == []
    store = store_for(ann)
    [summary] = store.list("INBOX").messages
    bounce = message_from_bytes(store.fetch("INBOX", summary.uid).raw, policy=policy.default)
    assert bounce["From"].addresses[0].addr_spec == f"MAILER-DAEMON@{settings.MAIL_HOST}"
    assert bounce["In-Reply-To"] == "<q-1@laptop.test>"
    human, status, returned = bounce.iter_parts()
    assert refusal in human.get_content() and "Drafts" not in human.get_content()  # the mail app keeps its own copy
    assert "Status: 5.1.1" in status.as_string()
    assert returned.get_content()["Message-ID"] == "<q-1@laptop.test>"
    assert store.list("Drafts").messages == []
