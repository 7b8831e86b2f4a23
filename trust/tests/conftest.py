"""Fixtures for domain trust: alice a hosting partner with a verified client domain acme.test, the
listener on loopback, our outbound servers in 192.0.2.0/28, and reverse names on the loopback DNS."""
from datetime import UTC, datetime
from email import message_from_bytes

import pytest
import time_machine

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import client_create, hosting_partner_enable
from testkit.clients import key_client
from testkit.mail import lmtp_send
from testkit.smtp_sink import inbound_listener
from trust.tests.reports_mail import DMARC_CORPUS, TLS_CORPUS

# After the corpus' days (3 and 4 November 2026), so the 30-day window holds them all.
NOW = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def embedded(plans, settings, tmp_path, dns_zone):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    settings.OUTBOUND_IPS = ["192.0.2.0/28"]
    dns_zone.set("10.2.0.192.in-addr.arpa", "PTR", "relay.mailwell.test")
    dns_zone.set("11.2.0.192.in-addr.arpa", "PTR", "relay2.mailwell.test")
    dns_zone.set("41.220.85.209.in-addr.arpa", "PTR", "mail-sor-f41.google.com")


@pytest.fixture
def clock():
    with time_machine.travel(NOW, tick=True) as traveller:
        yield traveller


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def acme(partner):
    """The client Acme's verified domain acme.test."""
    client = client_create(partner=partner, name="Acme")
    return domain_mark_verified(domain=domain_add_for_partner(partner=partner, name="acme.test", client=client))


@pytest.fixture
def hosting(alice, partner):
    return key_client(alice, list(PARTNER_SCOPES))


@pytest.fixture
def listener():
    with inbound_listener() as port:
        yield port


def deliver(port: int, raw: bytes, to: str, sender: str = "") -> dict:
    """One LMTP transaction; {} when every recipient took it (smtplib raises for a refused one)."""
    return lmtp_send(port, raw, [to], sender)


@pytest.fixture
def corpus_delivered(acme, listener):
    """Every report of the corpus delivered to acme.test's report addresses."""
    for build in (*DMARC_CORPUS, *TLS_CORPUS):
        raw = build()
        assert deliver(listener, raw, message_from_bytes(raw)["To"], "reporter@receiver.test") == {}
    return acme
