"""Postfix as production runs it (docker/postfix/: main.cf, our master.cf services, the pgsql
lookup tables), started natively in its own instance: mail from the internet on port 25 is taken
only for hosted, active addresses and handed over LMTP to the app's listener, which stores it; the
app's outgoing mail leaves through the relay port and arrives signed at the next hop."""
import imaplib
import smtplib
import ssl

import dkim
import pytest
from django.utils import timezone

from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.events.models import Event
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.store.factory import store_for
from mailcore.store.models import StoredMessage
from mailcore.usage.models import MailboxDailyUsage
from testkit.dovecot import managed_mailbox
from testkit.factories import client_message, make_mailbox, make_message
from testkit.postfix import postfix
from testkit.smtp_sink import inbound_listener, smtp_sink, submission_intake
from testkit.worker_process import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix reads the rows the test committed


@pytest.fixture
def mailbox(plans, alice, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    return make_mailbox(alice.account, "ann@example.test")


@pytest.fixture
def mx(mailbox):
    """Postfix on port 25 (a loopback port) in front of the app's listener."""
    # The test's clients connect from loopback, which production's mynetworks trusts; here they
    # stand for the internet, so the instance trusts another network instead.
    with inbound_listener() as listener_port, postfix(lmtp=f"127.0.0.1:{listener_port}",
                                                       mynetworks="203.0.113.0/24") as instance:
        yield instance


def internet(instance) -> smtplib.SMTP:
    client = smtplib.SMTP("127.0.0.1", instance.ports["smtp"], timeout=30)
    client.ehlo("sender.elsewhere.test")
    return client


def in_inbox(mailbox, subject: str) -> bool:
    return StoredMessage.objects.filter(folder__mailbox=mailbox, folder__name="INBOX", subject=subject).exists()


def test_mail_from_the_internet_reaches_a_hosted_mailbox_through_the_listener(mx, mailbox):
    with internet(mx) as client:
        refused = client.sendmail("someone@elsewhere.test", [mailbox.address],
                                  make_message("Hello from outside", to=mailbox.address))
    assert refused == {}
    wait_until(lambda: in_inbox(mailbox, "Hello from outside"), timeout=30, what="the message in the inbox")


def test_an_unknown_recipient_is_refused_at_rcpt(mx, mailbox):
    with internet(mx) as client:
        client.mail("someone@elsewhere.test")
        code, text = client.rcpt("nobody@example.test")
    assert code == 550 and b"5.1.1" in text


def test_a_disabled_mailbox_is_refused_at_rcpt(mx, mailbox):
    mailbox.is_active = False
    mailbox.save()
    with internet(mx) as client:
        client.mail("someone@elsewhere.test")
        code, _ = client.rcpt(mailbox.address)
    assert code == 550


def test_a_domain_we_do_not_host_is_not_relayed(mx, mailbox):
    with internet(mx) as client:
        client.mail("someone@elsewhere.test")
        code, text = client.rcpt("victim@elsewhere.test")
    assert code == 554 and b"Relay access denied" in text


def test_the_apps_mail_leaves_through_postfix_signed(mailbox, alice, settings):
    with smtp_sink() as (sink_port, sink), postfix(lmtp="127.0.0.1:1", relayhost=f"127.0.0.1:{sink_port}") as mta:
        settings.SMTP_URL = f"smtp://127.0.0.1:{mta.ports['10025']}"
        mail_send(account=alice.account, user=alice, request=SendRequest(
            from_email=mailbox.address, to=["reader@elsewhere.test"], subject="Signed", body_text="Hello"))
        assert outbound_dispatch_due() == 1
        wait_until(lambda: sink.messages, timeout=30, what="the message at the next hop")
    assert [m.rcpt_tos for m in sink.messages] == [["reader@elsewhere.test"]], mta.log()[-2000:]
    record = dkim_public_record(dkim_key_for("example.test")).encode()
    assert dkim.verify(sink.messages[0].content, dnsfunc=lambda name, timeout=5: record)


# Submission: port 587 as a mailbox owner's own mail client uses it.

PASSWORD = "correct horse battery staple"


@pytest.fixture
def owner(plans, imap_settings):
    return managed_mailbox(password=PASSWORD)


@pytest.fixture
def submission(owner, imap_settings, settings):
    """Postfix's submission port with SASL through Dovecot and the app's intake behind it; the app's
    mail leaves through Postfix's relay port to a sink standing for the next hop."""
    with smtp_sink() as (sink_port, sink), submission_intake() as intake_port, postfix(
            lmtp="127.0.0.1:1", relayhost=f"127.0.0.1:{sink_port}",
            smtpd_sasl_path=f"inet:127.0.0.1:{imap_settings.auth_port}",
            mailwell_submission_intake=f"inet:127.0.0.1:{intake_port}") as mta:
        settings.SMTP_URL = f"smtp://127.0.0.1:{mta.ports['10025']}"
        yield mta, sink


def mail_client(mta) -> smtplib.SMTP:
    """A client on port 587 after STARTTLS, trusting only the instance's own certificate."""
    client = smtplib.SMTP("127.0.0.1", mta.ports["submission"], timeout=30)
    client.ehlo("laptop.home.test")
    context = ssl.create_default_context(cafile=str(mta.directory / "tls" / "fullchain.pem"))
    context.check_hostname = False  # issued to mail.mailwell.test; the client connects to 127.0.0.1
    client.starttls(context=context)
    client.ehlo("laptop.home.test")
    return client


def test_an_owner_submits_from_a_mail_client_and_it_leaves_signed_counted_and_kept(submission, owner,
                                                                                   imap_settings):
    mta, sink = submission
    with mail_client(mta) as client:
        client.login(owner.address, PASSWORD)
        refused = client.sendmail(owner.address, ["reader@elsewhere.test", "hidden@elsewhere.test"],
                                  client_message(f'"Owner, The" <{owner.address}>', "From my laptop",
                                                 headers="Bcc: hidden@elsewhere.test\r\n"))
    assert refused == {}
    queued = OutboundMessage.objects.get(mailbox=owner)
    assert MailboxDailyUsage.objects.get(mailbox=owner).sends == 1  # the mailbox's send quota

    assert outbound_dispatch_due() == 1
    wait_until(lambda: sink.messages, timeout=30, what="the message at the next hop")
    arrived = sink.messages[0]
    assert sorted(arrived.rcpt_tos) == ["hidden@elsewhere.test", "reader@elsewhere.test"]
    assert b"Bcc:" not in arrived.content and b"Message-ID: " in arrived.content and b"Date: " in arrived.content
    domain = owner.address.partition("@")[2]
    record = dkim_public_record(dkim_key_for(domain)).encode()
    assert dkim.verify(arrived.content, dnsfunc=lambda name, timeout=5: record)

    # The client saves its own copy over IMAP, as Thunderbird, Outlook and Apple Mail do: Sent keeps one.
    client = imaplib.IMAP4(imap_settings.host, imap_settings.imap_port, timeout=30)
    client.login(owner.address, PASSWORD)
    kept = store_for(owner).list("Sent").messages[0]
    client.append("Sent", "(\\Seen)", None, store_for(owner).fetch("Sent", kept.uid).raw)
    client.logout()
    sent = store_for(owner).list("Sent").messages
    assert [message.subject for message in sent] == ["From my laptop"]
    event = Event.objects.get(name="email.sent", account=owner.account)
    assert event.data["message_id"] == str(queued.message_id) and event.data["to"] == ["reader@elsewhere.test"]
    assert event.data["subject"] == "From my laptop"


def test_login_is_offered_only_after_starttls(submission):
    mta, _ = submission
    with smtplib.SMTP("127.0.0.1", mta.ports["submission"], timeout=30) as client:
        client.ehlo("laptop.home.test")
        assert not client.has_extn("auth") and client.has_extn("starttls")


def test_a_wrong_password_and_a_disabled_mailbox_cannot_submit(submission, owner):
    mta, _ = submission
    with mail_client(mta) as client, pytest.raises(smtplib.SMTPAuthenticationError):
        client.login(owner.address, "wrong password")
    owner.is_active = False
    owner.save()
    with mail_client(mta) as client, pytest.raises(smtplib.SMTPAuthenticationError):
        client.login(owner.address, PASSWORD)
    assert not OutboundMessage.objects.exists()


def test_an_owner_sends_only_as_their_own_address(submission, owner):
    mta, _ = submission
    with mail_client(mta) as client:
        client.login(owner.address, PASSWORD)
        client.mail("ceo@example.test")
        code, text = client.rcpt("reader@elsewhere.test")  # Postfix: not this login's address
        assert code == 553 and b"not owned by user" in text
        client.rset()
        with pytest.raises(smtplib.SMTPDataError) as refused:  # the intake: a From header of someone else
            client.sendmail(owner.address, ["reader@elsewhere.test"],
                            client_message("ceo@example.test", "Wire the money"))
    assert refused.value.smtp_code == 550 and b"own address" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()


def test_a_mailbox_over_its_daily_quota_is_told_so_by_its_client(submission, owner):
    mta, _ = submission
    MailboxDailyUsage.objects.create(mailbox=owner, date=timezone.now().date(),
                                     sends=owner.effective_plan.sends_per_day)
    with mail_client(mta) as client:
        client.login(owner.address, PASSWORD)
        with pytest.raises(smtplib.SMTPDataError) as refused:
            client.sendmail(owner.address, ["reader@elsewhere.test"],
                            client_message(owner.address, "One too many"))
    assert refused.value.smtp_code == 550 and b"daily quota" in refused.value.smtp_error
    assert not OutboundMessage.objects.exists()
