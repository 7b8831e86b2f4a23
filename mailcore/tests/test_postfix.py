"""Postfix as production runs it (docker/postfix/: main.cf, our master.cf services, the pgsql
lookup tables), started natively in its own instance: mail from the internet on port 25 is taken
only for hosted, active addresses and handed over LMTP to the app's listener, which stores it; the
app's outgoing mail leaves through the relay port and arrives signed at the next hop."""
import smtplib

import dkim
import pytest

from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.store.models import StoredMessage
from testkit.factories import make_mailbox, make_message
from testkit.postfix import postfix
from testkit.smtp_sink import inbound_listener, smtp_sink
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
