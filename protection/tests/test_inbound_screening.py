"""Inbound mail screened by the suite's real rspamd (clamd behind it, DNS on loopback) as senders see
it: SMTP replies from our listener (the way Postfix's port-25 proxy relays them, XFORWARD telling
the internet client's address), and the stored copies read back from Dovecot and the embedded store."""
import base64
import os
import signal
import smtplib
import threading
import time
import uuid
from email import message_from_bytes
from email.policy import default as default_policy

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.cache import cache

from mailcore.accounts.models import Account, Plan
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create
from mailcore.rules.filters import VacationInput, vacation_set
from mailcore.store.factory import store_for
from protection.local_scanners import EICAR
from protection.models import DomainPolicy, Quarantined, SenderRule
from protection.screening import DOWN_SINCE_KEY
from testkit.postfix import postfix
from testkit.rspamd import GREYLIST_DELAY_SECONDS, GTUBE, start_test_rspamd, stop_test_rspamd
from testkit.smtp_sink import inbound_listener, smtp_sink

pytestmark = pytest.mark.django_db(transaction=True)

SPOOFER_IP = "203.0.113.66"
PAYPAL_IP = "192.0.2.25"
SENDER_IP = "198.51.100.20"  # sender.test's own server, with its names and SPF on the loopback DNS


class Site:
    def __init__(self, mailbox, listener: int, outbox):
        self.mailbox, self.listener, self.outbox = mailbox, listener, outbox

    @property
    def store(self):
        return store_for(self.mailbox)

    def send(self, raw: bytes, *, envelope_from: str, ip: str = SPOOFER_IP, helo: str = "mx.sender.test"
             ) -> tuple[int, str]:
        if envelope_from.endswith("@sender.test") and ip == SPOOFER_IP:
            ip = SENDER_IP
        """One SMTP transaction as Postfix's before-queue proxy makes it; the reply after DATA."""
        with smtplib.SMTP("127.0.0.1", self.listener) as client:
            client.ehlo("postfix.internal")
            assert client.has_extn("xforward")
            assert client.docmd("XFORWARD", f"NAME=[UNAVAILABLE] ADDR={ip} HELO={helo} PROTO=ESMTP")[0] == 250
            assert client.mail(envelope_from)[0] == 250
            assert client.rcpt(self.mailbox.address)[0] == 250
            code, reply = client.data(raw)
        return code, reply.decode()

    def stored(self, folder: str) -> list:
        store = self.store
        return [message_from_bytes(store.fetch(folder, summary.uid).raw, policy=default_policy)
                for summary in store.list(folder).messages]


@pytest.fixture(params=["embedded", "imap"])
def site(request, settings, plans, rspamd_settings, dns_zone, tmp_path):
    settings.DATA_DIR = tmp_path
    settings.MAIL_HOST = "mx.mailwell.test"
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="premium"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:12]}.test"))
    DomainPolicy.objects.create(domain=domain, greylist=False)  # the greylisting test turns it on
    mailbox = mailbox_create(domain=domain, local_part="ann", password="ann password 1")
    with smtp_sink() as (port, relay):
        if request.param == "imap":
            dovecot = request.getfixturevalue("imap_settings")
            settings.SMTP_URL = ""
            outbox = dovecot.submitted
        else:
            settings.MAIL_STORE = "embedded"
            settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
            outbox = relay
        store_for(mailbox).ensure_folders()
        publish(dns_zone, "sender.test", SENDER_IP)
        CURRENT["to"] = mailbox.address
        with inbound_listener() as listener:
            yield Site(mailbox, listener, outbox)


def publish(dns_zone, domain: str, ip: str) -> None:
    """A well-kept sending domain: its server's name forward and back, MX and SPF."""
    dns_zone.set(domain, "TXT", f"v=spf1 ip4:{ip} -all")
    dns_zone.set(domain, "MX", f"10 mx.{domain}")
    dns_zone.set(f"mx.{domain}", "A", ip)
    dns_zone.set(".".join(reversed(ip.split("."))) + ".in-addr.arpa", "PTR", f"mx.{domain}")


CURRENT = {"to": "ann@example.test"}


def message(*, sender: str = "Service <service@paypal.test>", subject: str = "Your account", body: str = "",
            extra: str = "", to: str = "") -> bytes:
    to = to or CURRENT["to"]
    body = body or f"Hello, this is message {uuid.uuid4().hex}. See you at the meeting on Tuesday."
    return (f"{extra}From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@sender.test>\r\n"
            f"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n").encode()


def publish_paypal(dns_zone, policy: str) -> None:
    publish(dns_zone, "paypal.test", PAYPAL_IP)
    dns_zone.set("_dmarc.paypal.test", "TXT", f"v=DMARC1; p={policy}")


def ours(stored) -> list[str]:
    return [value for value in stored.get_all("Authentication-Results", []) if value.startswith("mx.mailwell.test;")]


def test_the_gtube_string_is_refused_at_smtp_and_nothing_is_stored(site):
    code, reply = site.send(message(body=GTUBE, sender="Bea <bea@sender.test>"), envelope_from="bea@sender.test")

    assert (code, reply) == (550, "5.7.1 Message refused as spam (score 15.0)")
    assert site.stored("INBOX") == [] and site.stored("Junk") == []


def test_with_a_higher_refusal_threshold_gtube_is_held_in_the_quarantine_with_its_reasons(site):
    DomainPolicy.objects.filter(domain=site.mailbox.domain).update(refuse_at=20)

    code, reply = site.send(message(body=GTUBE, subject="Held", sender="Bea <bea@sender.test>"),
                            envelope_from="bea@sender.test")

    assert code == 250 and "held for review" in reply
    [held] = Quarantined.objects.filter(mailbox=site.mailbox)
    assert (held.subject, held.score, held.envelope_from) == ("Held", 15.0, "bea@sender.test")
    assert "It contains the standard spam test string (GTUBE)." in held.reasons
    assert b"X-Spam-Action: quarantine" in held.raw
    assert site.stored("INBOX") == [] and site.stored("Junk") == []


def test_eicar_is_refused_with_the_signatures_name(site):
    raw = (f"From: Bea <bea@sender.test>\r\nTo: {site.mailbox.address}\r\nSubject: Invoice\r\n"
           f"Message-ID: <{uuid.uuid4().hex}@sender.test>\r\nMIME-Version: 1.0\r\n"
           'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n'
           f"See attached ({uuid.uuid4().hex}).\r\n--b\r\nContent-Type: application/octet-stream\r\n"
           'Content-Disposition: attachment; filename="invoice.com"\r\nContent-Transfer-Encoding: base64\r\n\r\n'
           f"{base64.b64encode(EICAR).decode()}\r\n--b--\r\n").encode()

    code, reply = site.send(raw, envelope_from="bea@sender.test")

    assert (code, reply) == (554, "5.7.1 Message refused: it contains a virus (Eicar-Test-Signature)")
    assert site.stored("INBOX") == [] and site.stored("Junk") == []


def test_a_paypal_spoof_with_p_reject_is_refused_with_the_reason(site, dns_zone):
    publish_paypal(dns_zone, "reject")

    code, reply = site.send(message(), envelope_from="service@paypal.test")

    assert code == 550
    assert reply == ("5.7.1 Message refused: paypal.test publishes a DMARC policy of p=reject and this message "
                     "was not sent by paypal.test's servers")
    assert site.stored("INBOX") == [] and site.stored("Junk") == []


def test_a_paypal_spoof_with_p_quarantine_lands_in_junk_with_its_results_and_no_vacation_reply(site, dns_zone):
    publish_paypal(dns_zone, "quarantine")
    vacation_set(mailbox=site.mailbox, data=VacationInput(enabled=True, subject="Away", body="Away.", days=7))
    sent_before = len(site.outbox.messages)

    code, _ = site.send(message(subject="Verify your account", to=site.mailbox.address),
                        envelope_from="service@paypal.test")

    assert code == 250
    assert site.stored("INBOX") == []
    [junk] = site.stored("Junk")
    assert junk["Subject"] == "Verify your account"
    assert ours(junk) == ["mx.mailwell.test; spf=fail smtp.mailfrom=service@paypal.test; dkim=none; "
                          "dmarc=fail (p=quarantine) header.from=paypal.test; arc=none"]
    assert (junk["X-Mailwell-Verdict"], junk["X-Spam-Action"]) == ("junk", "junk")
    assert float(junk["X-Spam-Score"]) > 0
    time.sleep(1)  # a vacation reply, had one been sent, leaves at once
    assert site.outbox.messages[sent_before:] == []


def test_the_same_message_from_paypals_own_server_is_delivered_to_the_inbox(site, dns_zone):
    publish_paypal(dns_zone, "reject")

    code, _ = site.send(message(subject="Your receipt"), envelope_from="service@paypal.test", ip=PAYPAL_IP)

    assert code == 250
    [inbox] = site.stored("INBOX")
    assert ours(inbox) == ["mx.mailwell.test; spf=pass smtp.mailfrom=service@paypal.test; dkim=none; "
                           "dmarc=pass header.from=paypal.test; arc=none"]
    assert inbox["X-Spam-Action"] == "inbox" and inbox["X-Mailwell-Verdict"] is None


def test_a_dkim_signed_message_whose_key_is_on_the_loopback_dns_is_stored_with_dkim_pass(site, dns_zone):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    selector = f"s{uuid.uuid4().hex[:8]}"  # rspamd keeps keys it fetched: each test's key a name of its own
    dns_zone.set(f"{selector}._domainkey.signed.test", "TXT", f"v=DKIM1; k=rsa; p={base64.b64encode(public).decode()}")
    raw = message(sender="News <news@signed.test>", subject="Our news")
    signed = dkim.sign(raw, selector.encode(), b"signed.test", private,
                       include_headers=[b"from", b"to", b"subject", b"date"])

    code, _ = site.send(signed + raw, envelope_from="news@signed.test")

    assert code == 250
    [inbox] = site.stored("INBOX")
    [results] = ours(inbox)
    assert "; dkim=pass header.d=signed.test;" in results
    assert "dmarc=none header.from=signed.test" in results


def test_a_forged_authentication_results_and_verdict_from_outside_are_gone(site):
    forged = ("Authentication-Results: mx.mailwell.test; spf=pass smtp.mailfrom=bea@sender.test;\r\n"
              "  dkim=pass header.d=paypal.test; dmarc=pass header.from=paypal.test\r\n"
              "X-Spam-Score: -50\r\nX-Mailwell-Verdict: inbox\r\nX-Spam-Action: inbox\r\n"
              "Authentication-Results: other.example; spf=pass smtp.mailfrom=bea@sender.test\r\n")

    code, _ = site.send(message(sender="Bea <bea@sender.test>", subject="Forged", extra=forged),
                        envelope_from="bea@sender.test")

    assert code == 250
    [inbox] = site.stored("INBOX")
    [results] = ours(inbox)
    assert "dkim=none" in results and "dmarc=none" in results
    assert inbox.get_all("Authentication-Results")[-1] == "other.example; spf=pass smtp.mailfrom=bea@sender.test"
    assert inbox.get_all("X-Spam-Score") == [inbox["X-Spam-Score"]] and float(inbox["X-Spam-Score"]) > -50
    assert inbox.get_all("X-Mailwell-Verdict") is None


def test_a_forged_junk_verdict_cannot_file_mail_into_junk(site):
    code, _ = site.send(message(sender="Bea <bea@sender.test>", subject="Hello", extra="X-Mailwell-Verdict: junk\r\n"),
                        envelope_from="bea@sender.test")

    assert code == 250
    assert [stored["Subject"] for stored in site.stored("INBOX")] == ["Hello"]


def test_a_blocked_sender_is_refused_and_an_allowed_one_skips_junk_unless_dmarc_failed(site, dns_zone):
    publish_paypal(dns_zone, "quarantine")
    SenderRule.objects.create(mailbox=site.mailbox, kind="block", sender="pest.test")
    SenderRule.objects.create(domain=site.mailbox.domain, kind="allow", sender="service@paypal.test")

    blocked = site.send(message(sender="Pest <a@mail.pest.test>"), envelope_from="a@mail.pest.test")
    spoofed = site.send(message(subject="Spoofed"), envelope_from="service@paypal.test")
    genuine = site.send(message(subject="Genuine", body=f"{GTUBE[:20]} {uuid.uuid4().hex}"),
                        envelope_from="service@paypal.test", ip=PAYPAL_IP)

    assert blocked == (550, "5.7.1 Message refused: the recipient does not accept mail from this sender")
    assert spoofed[0] == genuine[0] == 250
    assert [stored["Subject"] for stored in site.stored("Junk")] == ["Spoofed"]  # allow never covers a spoof
    assert [stored["Subject"] for stored in site.stored("INBOX")] == ["Genuine"]


def test_xforward_from_an_untrusted_address_is_refused(site, settings):
    settings.INBOUND_XFORWARD_FROM = ["192.0.2.0/24"]

    with smtplib.SMTP("127.0.0.1", site.listener) as client:
        client.ehlo("client.example")
        offered = client.has_extn("xforward")
        answer = client.docmd("XFORWARD", f"ADDR={PAYPAL_IP}")

    assert not offered
    assert answer == (550, b"5.7.0 XFORWARD is not permitted from this address")


def test_a_greylisted_sender_is_asked_to_retry_and_its_retry_after_the_delay_is_accepted(site, dns_zone):
    DomainPolicy.objects.filter(domain=site.mailbox.domain).update(greylist=True)
    dns_zone.set("paypal.test", "TXT", "v=spf1 ip4:192.0.2.25 -all")
    raw = message(subject="URGENT verify your account now",
                  body=f"Click here to verify your account password. Reference {uuid.uuid4().hex}")

    def attempt():
        return site.send(raw, envelope_from="service@paypal.test", ip="198.51.100.7", helo="unknown")

    first = attempt()
    assert first == (451, "4.7.1 Greylisted: please try again in a few minutes")
    assert site.stored("INBOX") == [] and site.stored("Junk") == []
    time.sleep(GREYLIST_DELAY_SECONDS + 1)

    assert attempt()[0] == 250
    kept = site.stored("INBOX") + site.stored("Junk") + list(Quarantined.objects.filter(mailbox=site.mailbox))
    assert len(kept) == 1, [(item.score, item.reasons) for item in Quarantined.objects.all()]


def test_a_domain_that_does_not_greylist_gets_a_full_score_for_a_quick_resend(site, dns_zone):
    """rspamd greylists by itself; for a domain with greylisting off it is told not to, so a resend
    inside the delay is scored in full instead of answered early with no score."""
    dns_zone.set("paypal.test", "TXT", "v=spf1 ip4:192.0.2.25 -all")
    raw = message(subject="URGENT verify your account now",
                  body=f"Click here to verify your account password. Reference {uuid.uuid4().hex}")

    answers = [site.send(raw, envelope_from="service@paypal.test", ip="198.51.100.8", helo="unknown")[0]
               for _ in range(2)]

    assert answers == [250, 250]
    scores = ([float(copy["X-Spam-Score"]) for copy in site.stored("INBOX") + site.stored("Junk")]
              + [held.score for held in Quarantined.objects.filter(mailbox=site.mailbox)])
    assert len(scores) == 2 and all(score > 0 for score in scores), scores


def test_with_rspamd_unreachable_mail_is_deferred_then_accepted_unscanned_and_marked(site, settings):
    from protection.local_scanners import free_port

    settings.RSPAMD_URL = f"http://127.0.0.1:{free_port()}"
    settings.SCANNING_UNSCANNED_AFTER_SECONDS = 2
    cache.delete(DOWN_SINCE_KEY)

    first = site.send(message(sender="Bea <bea@sender.test>", subject="Later"), envelope_from="bea@sender.test")
    assert first == (451, "4.7.1 Message could not be scanned, try again later")
    assert site.stored("INBOX") == []
    time.sleep(2.5)
    later = site.send(message(sender="Bea <bea@sender.test>", subject="Later"), envelope_from="bea@sender.test")
    cache.delete(DOWN_SINCE_KEY)

    assert later[0] == 250
    [inbox] = site.stored("INBOX")
    assert (inbox["X-Spam-Action"], ours(inbox)) == ("unscanned", ["mx.mailwell.test; none"])


def test_rspamd_killed_in_the_middle_of_a_burst_loses_nothing_it_acknowledged(site, settings, dns_zone, _dns_server):
    _zone, dns_port = _dns_server
    private = start_test_rspamd(dns_port=dns_port, clamd=None)
    settings.RSPAMD_URL = private.url
    settings.SCANNING_UNSCANNED_AFTER_SECONDS = 0
    replies: dict[str, int] = {}

    def send_some(number: int) -> None:
        for round_ in range(8):
            subject = f"Burst {number}-{round_}"
            try:
                replies[subject] = site.send(message(sender="Bea <bea@sender.test>", subject=subject),
                                             envelope_from="bea@sender.test")[0]
            except smtplib.SMTPException:
                replies[subject] = 0

    try:
        threads = [threading.Thread(target=send_some, args=(number,)) for number in range(4)]
        for thread in threads:
            thread.start()
        while len(replies) < 6:
            time.sleep(0.05)
        os.killpg(private.process.popen.pid, signal.SIGKILL)  # the main process and its workers, at once
        for thread in threads:
            thread.join(120)
    finally:
        stop_test_rspamd(private)

    accepted = sorted(subject for subject, code in replies.items() if code == 250)
    assert len(replies) == 32
    assert set(replies.values()) <= {250, 451}
    assert 451 in replies.values() and len(accepted) >= 6
    stored = sorted(message["Subject"] for message in site.stored("INBOX") + site.stored("Junk"))
    assert stored == accepted  # every acknowledged message is there, once; nothing deferred was kept


@pytest.mark.parametrize("site", ["embedded"], indirect=True)  # Postfix's proxy is the same for both stores
def test_through_postfixs_port_25_spam_is_refused_in_the_senders_own_session(site, dns_zone):
    bob = mailbox_create(domain=site.mailbox.domain, local_part="bob", password="bob password 1")
    with postfix(lmtp=f"127.0.0.1:{site.listener}", mynetworks="192.0.2.0/24") as mta, \
            smtplib.SMTP("127.0.0.1", mta.ports["smtp"], timeout=60) as client:
        client.ehlo("mx.spoofer.test")
        spam = (client.mail("bea@sender.test"), client.rcpt(site.mailbox.address),
                client.data(message(sender="Bea <bea@sender.test>", body=GTUBE)))
        client.rset()
        second = (client.mail("bea@sender.test"), client.rcpt(site.mailbox.address),
                  client.rcpt(bob.address))
        client.rset()
        accepted = (client.mail("bea@sender.test"), client.rcpt(site.mailbox.address),
                    client.data(message(sender="Bea <bea@sender.test>", subject="Through Postfix")))

    assert spam[2] == (550, b"5.7.1 Message refused as spam (score 15.0)")
    assert second[2][0] == 452 and b"One recipient per transaction" in second[2][1]
    assert accepted[2][0] == 250
    assert [stored["Subject"] for stored in site.stored("INBOX") + site.stored("Junk")] == ["Through Postfix"]
