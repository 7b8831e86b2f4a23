"""/dav/ on a partner's verified webmail hostname: only the mailboxes of that partner's clients sign
in there (phones set up with the hostname their owner knows); anyone else gets the answer of a
wrong password, as in the webmail's sign-in."""
import base64

import pytest
from django.test import Client

from mailcore.accounts.models import Plan
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.services import hosting_partner_enable
from webmail import hostnames
from webmail.hostnames import webmail_hostname_check, webmail_hostname_claim
from testkit.factories import AccountFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)  # hostname changes reach the request path on commit
HOST = "webmail.acme.test"
PASSWORD = "client-password-1"
PROPFIND = '<d:propfind xmlns:d="DAV:"><d:prop><d:current-user-principal/></d:prop></d:propfind>'


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


@pytest.fixture
def partner(dns_zone, settings):
    settings.WEBMAIL_HOST = "webmail.mailwell.test"
    partner = hosting_partner_enable(account=AccountFactory(plan_code="premium"))
    dns_zone.set(HOST, "CNAME", settings.WEBMAIL_HOST)
    webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname=HOST))
    return partner


@pytest.fixture
def client_mailbox(partner):
    domain_mark_verified(domain=domain_add_for_partner(partner=partner, name="acme-client.test"))
    return make_mailbox(partner.account, "zoe@acme-client.test", password=PASSWORD, plan=Plan.objects.get(code="pro"))


def propfind(address: str, password: str):
    basic = base64.b64encode(f"{address}:{password}".encode()).decode()
    return Client(HTTP_HOST=HOST).generic("PROPFIND", "/dav/", PROPFIND, content_type="application/xml",
                                          HTTP_DEPTH="0", HTTP_AUTHORIZATION=f"Basic {basic}")


def test_a_client_mailbox_of_the_partner_syncs_on_the_partners_hostname(client_mailbox):
    response = propfind("zoe@acme-client.test", PASSWORD)

    assert response.status_code == 207
    assert b"/dav/principals/zoe@acme-client.test/" in response.content


def test_a_mailbox_that_is_not_the_partners_gets_the_wrong_password_answer_there(partner, client_mailbox):
    outsider = make_mailbox(AccountFactory(plan_code="pro"), "ann@example.test", password="ann-password-1")

    on_partner_host = propfind(outsider.address, "ann-password-1")
    on_platform = Client().generic("PROPFIND", "/dav/", PROPFIND, HTTP_DEPTH="0", HTTP_AUTHORIZATION="Basic " +
                                   base64.b64encode(b"ann@example.test:ann-password-1").decode())

    assert on_partner_host.status_code == 401
    assert on_platform.status_code == 207
