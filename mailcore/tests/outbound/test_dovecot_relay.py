"""Mail Dovecot sends itself leaves signed (issue 34, point 2): a vacation reply Pigeonhole sends
through its submission_host reaches the relay signed with the owner's domain's key (d= is its From
domain, verified by dkimpy over the loopback DNS), still with the null sender. Our relay for
Dovecot's mail signs a redirect with the platform's key when its From is no domain of ours (its
envelope sender SRS-rewritten as the listener's forwards are), and
refuses what cannot be signed."""
import smtplib
import time
import uuid

import dkim
import pytest

from mailcore.accounts.models import Account, Plan
from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create
from mailcore.outbound.srs import srs_reverse
from mailcore.rules.filters import VacationInput, vacation_set
from mailcore.store.factory import store_for
from testkit.signed_mail import publish_dkim, signature_tags, signed_and_aligned
from testkit.smtp_sink import dovecot_relay, inbound_listener, smtp_sink

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(predicate, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while not (found := predicate()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_a_vacation_reply_dovecot_sends_is_signed_with_the_owners_domain(imap_settings, plans, settings, dns_zone):
    settings.SMTP_URL = ""  # nothing leaves through the app: the reply is Dovecot's
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:12]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="owner", password="owner password 1")
    store_for(mailbox).ensure_folders()
    vacation_set(mailbox=mailbox, data=VacationInput(enabled=True, subject="Away until Monday",
                                                     body="Hello,\nI am away.", days=7))
    bea = f"bea-{mailbox.pk}@sender.test"
    start = len(imap_settings.submitted.messages)
    raw = (f"From: Bea <{bea}>\r\nTo: {mailbox.address}\r\nSubject: Question\r\n"
           f"Message-ID: <{uuid.uuid4().hex}@sender.test>\r\nDate: Wed, 04 Mar 2026 05:06:07 +0000\r\n"
           "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello.\r\n").encode()

    with inbound_listener() as listener, smtplib.LMTP("127.0.0.1", listener) as client:
        assert client.sendmail(bea, [mailbox.address], raw) == {}

    replies = wait_for(lambda: [message for message in imap_settings.submitted.messages[start:]
                                if message.rcpt_tos == [bea]])
    [reply] = replies
    assert reply.mail_from == "<>"
    message = signed_and_aligned(reply.content, dns_zone)
    assert (message["From"], message["Subject"]) == (mailbox.address, "Away until Monday")
    assert signature_tags(reply.content)["d"] == domain.name


def send_to_relay(raw: bytes, *, sender: str) -> list:
    with smtp_sink() as (sink_port, sink), dovecot_relay(f"smtp://127.0.0.1:{sink_port}") as port:
        with smtplib.SMTP("127.0.0.1", port) as client:
            client.sendmail(sender, ["far@elsewhere.test"], raw)
        return list(sink.messages)


def test_a_redirected_message_from_someone_elses_domain_leaves_with_srs_signed_by_the_platform(settings, dns_zone):
    settings.SYSTEM_MAIL_DOMAIN = "mail.platform.test"
    raw = (b"From: Carol <carol@outside.test>\r\nTo: ann@example.test\r\nSubject: Hi\r\n"
           b"X-Sieve-Redirected-From: ann@example.test\r\n\r\nHello.\r\n")

    [received] = send_to_relay(raw, sender="carol@outside.test")

    # as the listener's forwards: SRS onto the redirecting domain (here none of ours: the platform's),
    # so bounces come back to us and go on to Carol
    assert received.mail_from.startswith("SRS0=") and received.mail_from.endswith("@mail.platform.test")
    assert srs_reverse(received.mail_from) == "carol@outside.test"
    assert signature_tags(received.content)["d"] == "mail.platform.test"
    publish_dkim(dns_zone, "mail.platform.test")
    assert dkim.verify(received.content, dnsfunc=dkim_dnsfunc)


def test_a_message_without_a_from_is_refused_and_nothing_leaves(settings, dns_zone):
    with smtp_sink() as (sink_port, sink), dovecot_relay(f"smtp://127.0.0.1:{sink_port}") as port:
        with smtplib.SMTP("127.0.0.1", port) as client, pytest.raises(smtplib.SMTPDataError) as refused:
            client.sendmail("", ["far@elsewhere.test"], b"To: far@elsewhere.test\r\nSubject: Hi\r\n\r\nHello.\r\n")
        assert sink.messages == []
    assert refused.value.smtp_code == 554 and b"cannot be signed" in refused.value.smtp_error
