"""Forwarding as the next hop sees it (issue 34, points 1 and 8): mail from the internet reaches
Postfix's port 25, is screened by the suite's rspamd in our listener and forwarded through
Postfix's relay port to a sink standing for the forward target's server. The forward's envelope
sender is an SRS address on the forwarding domain, its ARC chain verifies with the forwarding
domain's key from the loopback DNS, and a bounce to that SRS address reaches the original sender."""
import base64
import re
import smtplib
import uuid

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.utils import timezone

from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.mailboxes.models import ForwardingRule
from mailcore.outbound.srs import srs_forward
from testkit.factories import make_mailbox
from testkit.mail import inbox
from testkit.postfix import postfix
from testkit.smtp_sink import inbound_listener, smtp_sink
from testkit.worker_process import wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # Postfix and the listener read committed rows

# The sender's server the test's client stands for: it tells Postfix so with XFORWARD (rspamd skips
# SPF and DKIM for a loopback client), and Postfix's proxy tells our listener.
CLIENT_IP = "198.51.100.20"


@pytest.fixture
def ann(plans, alice, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    settings.MAIL_HOST = "mx.mailwell.test"
    mailbox = make_mailbox(alice.account, "ann@example.test")
    ForwardingRule.objects.create(mailbox=mailbox, forward_to="ann@elsewhere.test", keep_copy=False,
                                  confirmed_at=timezone.now())
    return mailbox


@pytest.fixture
def mta(ann, rspamd_settings, dns_zone, settings):
    """Postfix on port 25 in front of our listener; its relay port (SMTP_URL) hands what leaves to
    the sink. The test's client stands for the internet: the instance trusts another network."""
    key = dkim_key_for("example.test")
    dns_zone.set(f"{key.selector}._domainkey.example.test", "TXT", dkim_public_record(key))
    with smtp_sink() as (sink_port, sink), inbound_listener() as listener_port, postfix(
            lmtp=f"127.0.0.1:{listener_port}", relayhost=f"127.0.0.1:{sink_port}",
            mynetworks="203.0.113.0/24", smtpd_authorized_xforward_hosts="127.0.0.1") as instance:
        settings.SMTP_URL = f"smtp://127.0.0.1:{instance.ports['10025']}"
        yield instance, sink


def internet(instance) -> smtplib.SMTP:
    client = smtplib.SMTP("127.0.0.1", instance.ports["smtp"], timeout=60)
    client.ehlo("mx.sender.test")
    assert client.docmd("XFORWARD", f"NAME=mx.sender.test ADDR={CLIENT_IP} HELO=mx.sender.test")[0] == 250
    return client


def signed_message(dns_zone, domain: str) -> bytes:
    """A message from a well-kept sending domain: SPF for the client's address, DMARC, and a DKIM
    signature whose key the loopback DNS serves."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = private.public_key().public_bytes(serialization.Encoding.DER,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    dns_zone.set(domain, "TXT", f"v=spf1 ip4:{CLIENT_IP} -all")
    dns_zone.set(domain, "MX", f"10 mx.{domain}")
    dns_zone.set(f"mx.{domain}", "A", CLIENT_IP)
    dns_zone.set(f"_dmarc.{domain}", "TXT", "v=DMARC1; p=reject")
    dns_zone.set(f"sel._domainkey.{domain}", "TXT", f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}")
    raw = (f"From: Bea <bea@{domain}>\r\nTo: ann@example.test\r\nSubject: The minutes\r\n"
           f"Date: Sun, 29 Nov 2026 10:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@{domain}>\r\n"
           f"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
           f"Hello Ann, the minutes of Tuesday's meeting are below. {uuid.uuid4().hex}\r\n").encode()
    return dkim.sign(raw, b"sel", domain.encode(), pem, include_headers=[b"from", b"to", b"subject", b"date"]) + raw


def test_a_forward_leaves_with_an_srs_sender_and_a_verifying_arc_seal_and_its_bounce_reaches_the_sender(
        mta, ann, dns_zone):
    instance, sink = mta
    domain = f"s{uuid.uuid4().hex[:12]}.test"  # the session's rspamd remembers senders: one of its own
    with internet(instance) as client:
        refused = client.sendmail(f"bea@{domain}", ["ann@example.test"], signed_message(dns_zone, domain))
    assert refused == {}
    wait_until(lambda: sink.messages, timeout=60, what="the forward at the next hop")

    [forward] = sink.messages
    assert forward.rcpt_tos == ["ann@elsewhere.test"], instance.log()[-3000:]
    assert re.fullmatch(rf"SRS0=[A-Za-z0-9+/]{{4}}=[A-Z2-7]{{2}}={re.escape(domain)}=bea@example\.test",
                        forward.mail_from), forward.mail_from
    cv, [arc_set], reason = dkim.arc_verify(forward.content, dnsfunc=dkim_dnsfunc)
    assert (cv, reason) == (dkim.CV_Pass, "success")
    assert (arc_set["cv"], arc_set["as-domain"], arc_set["ams-domain"]) == (b"none", b"example.test", b"example.test")
    assert arc_set["aar-value"].startswith(
        f"i=1; mx.mailwell.test; spf=pass smtp.mailfrom=bea@{domain}; dkim=pass header.d={domain}; "
        f"dmarc=pass header.from={domain}; arc=none".encode()), arc_set["aar-value"]
    assert inbox(ann) == []

    bounce = (f"From: Mail Delivery System <mailer-daemon@mx.elsewhere.test>\r\nTo: {forward.mail_from}\r\n"
              "Subject: Undelivered Mail Returned to Sender\r\nDate: Sun, 29 Nov 2026 10:05:00 +0000\r\n"
              f"Message-ID: <{uuid.uuid4().hex}@mx.elsewhere.test>\r\nMIME-Version: 1.0\r\n"
              'Content-Type: multipart/report; report-type=delivery-status; boundary="r"\r\n\r\n'
              "--r\r\nContent-Type: text/plain\r\n\r\nann@elsewhere.test: mailbox full.\r\n"
              "--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.elsewhere.test\r\n\r\n"
              "Final-Recipient: rfc822; ann@elsewhere.test\r\nAction: failed\r\nStatus: 5.2.2\r\n--r--\r\n")
    with internet(instance) as client:
        refused = client.sendmail("", [forward.mail_from], bounce.encode())
    assert refused == {}
    wait_until(lambda: len(sink.messages) == 2, timeout=60, what="the bounce at the original sender's server")
    returned = sink.messages[1]
    assert (returned.mail_from, returned.rcpt_tos) == ("<>", [f"bea@{domain}"])
    assert returned.content.endswith(bounce.encode()), returned.content.decode()


def test_a_forged_srs_address_and_one_on_a_domain_not_hosted_here_are_refused_at_rcpt(mta, ann):
    instance, sink = mta
    genuine = srs_forward("bea@sender.test", "example.test")
    with internet(instance) as client:
        client.mail("")
        forged = client.rcpt(genuine.replace("=bea@", "=ceo@"))
        made_up = client.rcpt("SRS0=abcd=AA=sender.test=bea@example.test")
        not_hosted = client.rcpt(srs_forward("bea@sender.test", "elsewhere.test"))
    assert forged == (550, b"5.1.1 Unknown or expired forwarding return address"), instance.log()[-3000:]
    assert made_up == (550, b"5.1.1 Unknown or expired forwarding return address")
    assert not_hosted[0] == 554 and b"Relay access denied" in not_hosted[1]
    assert sink.messages == []
