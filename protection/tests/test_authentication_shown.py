"""A spoofed PayPal message, screened by the suite's real rspamd against a p=quarantine DMARC record on
the loopback DNS: the copy in Junk carries our Authentication-Results, and its owner reads the failure
everywhere it is shown (email.received, GET /inbox/{uid}, the webmail's warning); a forged header of
ours that came with the message changes none of it."""
import uuid

import pytest
from django.conf import settings

from mailcore.inbound.delivery import deliver_each
from mailcore.inbound.recipients import resolve
from mailcore.inbound.screening import Arriving
from protection.models import DomainPolicy
from testkit.factories import make_mailbox
from testkit.mail import events

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rspamd_settings")]

ADDRESS = "ann@example.test"
PASSWORD = "mailbox-password-1"
SPOOFER_IP = "203.0.113.66"
PAYPAL_IP = "192.0.2.25"
FORGED = f"Authentication-Results: {settings.MAIL_HOST}; spf=pass; dkim=pass; dmarc=pass; arc=pass\r\n"


@pytest.fixture
def owner(alice, settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.DATA_DIR = tmp_path
    mailbox = make_mailbox(alice.account, ADDRESS, password=PASSWORD)
    # one delivery (no greylisting), and Junk however high the score: the DMARC policy decides here
    DomainPolicy.objects.create(domain=mailbox.domain, greylist=False, quarantine_at=90, refuse_at=95)
    return mailbox


def spoofed_paypal_message() -> bytes:
    return (f"{FORGED}From: PayPal <service@paypal.test>\r\nTo: {ADDRESS}\r\nSubject: Your account is limited\r\n"
            f"Date: Sun, 29 Nov 2026 03:00:00 +0000\r\nMessage-ID: <{uuid.uuid4().hex}@paypal.test>\r\n"
            "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
            f"Please confirm your password. {uuid.uuid4().hex}\r\n").encode()


def test_a_spoofed_message_in_junk_shows_its_failure_to_its_owner(owner, dns_zone, alice_api, client):
    dns_zone.set("paypal.test", "TXT", f"v=spf1 ip4:{PAYPAL_IP} -all")
    dns_zone.set("_dmarc.paypal.test", "TXT", "v=DMARC1; p=quarantine")
    arriving = Arriving(client_ip=SPOOFER_IP, helo="mx.spoofer.test", envelope_from="service@paypal.test",
                        recipients=(ADDRESS,))
    [result] = deliver_each(spoofed_paypal_message(), "service@paypal.test", [(ADDRESS, resolve(ADDRESS))],
                             arriving=arriving)
    assert result.reply.startswith("250"), result.reply

    [received] = events("email.received")
    assert received["authentication"]["dmarc"] == "fail"
    assert received["authentication"]["spf"] == "fail"

    [listed] = alice_api.get("/inbox", {"email": ADDRESS, "folder": "Junk"}).json()["messages"]
    message = alice_api.get(f"/inbox/{listed['uid']}", {"email": ADDRESS, "folder": "Junk"}).json()
    assert message["authentication"] == received["authentication"]
    assert message["authentication_warning"].startswith(
        "This message claims to be from paypal.test but was not sent by paypal.test's servers.")

    assert client.post("/webmail/", {"address": ADDRESS, "password": PASSWORD}).status_code == 302
    page = client.get(f"/webmail/folders/Junk/messages/{listed['uid']}/").content.decode()
    assert "This message claims to be from paypal.test but was not sent by paypal.test&#x27;s servers." in page
    assert "Why this is in Junk" in page
    assert "The sender&#x27;s domain says mail like this is suspect (DMARC)." in page
