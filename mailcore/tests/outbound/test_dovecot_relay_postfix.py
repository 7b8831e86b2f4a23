"""Production's chain for the mail Dovecot sends, past our relay: a vacation reply (null sender, From
a hosted mailbox) handed to the relay for Dovecot's mail leaves through Postfix's port 10025 (the
tested docker/postfix files) and reaches the next hop signed by its From domain, still with the
null sender."""
import smtplib

import pytest

from testkit.factories import make_domain
from testkit.postfix import postfix
from testkit.signed_mail import signed_and_aligned
from testkit.smtp_sink import dovecot_relay, smtp_sink
from testkit.worker_process import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix reads the rows the test committed


def test_a_vacation_reply_leaves_through_postfix_signed_by_its_from_domain(plans, alice, dns_zone):
    make_domain(alice.account, "away.test")
    reply = (b"From: ann@away.test\r\nTo: Bea <bea@sender.test>\r\nSubject: Away until Monday\r\n"
             b"Auto-Submitted: auto-replied (vacation)\r\nMessage-ID: <r1@away.test>\r\n"
             b"Date: Wed, 04 Mar 2026 05:06:07 +0000\r\n\r\nI am away.\r\n")

    with smtp_sink() as (sink_port, sink), postfix(lmtp="127.0.0.1:1", relayhost=f"127.0.0.1:{sink_port}") as mta:
        with dovecot_relay(f"smtp://127.0.0.1:{mta.ports['10025']}") as port, smtplib.SMTP("127.0.0.1", port) as client:
            client.sendmail("", ["bea@sender.test"], reply)  # Dovecot's submission of a vacation reply
        wait_until(lambda: sink.messages, timeout=30, what="the reply at the next hop")

    [received] = sink.messages
    assert (received.mail_from, received.rcpt_tos) == ("<>", ["bea@sender.test"]), mta.log()[-2000:]
    message = signed_and_aligned(received.content, dns_zone)
    assert message["Subject"] == "Away until Monday"
