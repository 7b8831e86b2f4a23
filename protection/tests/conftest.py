"""A hosting partner (alice) with two clients, a mailbox each, and a message held for each."""
import pytest

from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.mailboxes import partner_mailbox_create, slot_funding
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import client_create, hosting_partner_enable, slots_grant
from protection.quarantine import quarantine_keep


def held(to: str, subject: str = "Big sale", sender: str = "Shop News <news@shop.test>") -> bytes:
    """A message as the screener keeps it: our headers first, the verdict among them."""
    return (f"Authentication-Results: mail.mailwell.test; spf=pass smtp.mailfrom=news@shop.test; dkim=none; "
            f"dmarc=none header.from=shop.test; arc=none\r\nX-Spam-Score: 11.5\r\nX-Spam-Action: quarantine\r\n"
            f"X-Mailwell-Verdict: junk\r\n"
            f"From: {sender}\r\nTo: {to}\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject.replace(' ', '-')}@shop.test>\r\nDate: Wed, 04 Mar 2026 05:06:07 +0000\r\n\r\n"
            f"Everything must go.\r\n").encode()


def keep(mailbox, subject: str = "Big sale", **options):
    return quarantine_keep(mailbox=mailbox, raw=held(mailbox.address, subject), envelope_from="news@shop.test",
                           score=options.pop("score", 11.5),
                           reasons=options.pop("reasons", ["Many people reported similar messages as spam."]),
                           symbols=options.pop("symbols", {"BAYES_SPAM": 5.1}), **options)


def client_mailbox(partner, client_name: str, domain_name: str, local_part: str):
    client = client_create(partner=partner, name=client_name)
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name=domain_name, client=client))
    return partner_mailbox_create(partner=partner, domain=domain, local_part=local_part, password="mailbox-pass-1",
                                  plan_id="pro", fund=lambda: slot_funding(partner=partner))


@pytest.fixture
def embedded(settings, tmp_path):
    settings.MAIL_STORE = "embedded"
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    settings.PUBLIC_BASE_URL = "http://testserver"


@pytest.fixture
def partner(alice, embedded):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    slots_grant(partner=partner, count=3)
    return partner


@pytest.fixture
def acme(partner):
    """The partner mailbox record of ann@acme.test (client Acme)."""
    return client_mailbox(partner, "Acme", "acme.test", "ann")


@pytest.fixture
def globex(partner):
    """The partner mailbox record of gus@globex.test (client Globex)."""
    return client_mailbox(partner, "Globex", "globex.test", "gus")
