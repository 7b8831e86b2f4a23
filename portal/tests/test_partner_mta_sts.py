"""The partner portal's MTA-STS page: what enforce means, the policy served, the mode switch (with the
new _mta-sts record to publish); another partner's domain is 404. The wizard shows the new records."""
import re

import pytest

from mailcore.domains.models import Domain
from mailcore.domains.mta_sts import mta_sts_record_value
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def domain(partner):
    return domain_add_for_partner(partner=partner, name="acme.test")


def page_of(response) -> str:
    return response.content.decode()


def test_the_page_says_what_enforce_means_and_when_to_switch(alice_client, domain):
    page = page_of(alice_client.get(f"/portal/domains/{domain.pk}/mta-sts/"))
    assert "<strong>Enforce</strong> means that a sender which honours MTA-STS" in page
    assert "once the TLS reports for acme.test show no failures for a couple of weeks, switch to enforce" in page
    assert re.search(r'<input type="radio" name="mode" value="testing"[^>]*checked', page)
    assert "Served at <code>https://mta-sts.acme.test/.well-known/mta-sts.txt</code> once acme.test is verified" in page
    assert '<pre id="mta-sts-policy">version: STSv1\r\nmode: testing\r\nmx: mail.mailwell.test\r\n' in page
    assert f'<code id="mta-sts-record">{mta_sts_record_value(domain)}</code>' in page


def test_the_domain_page_links_to_it_with_the_current_mode(alice_client, domain):
    page = page_of(alice_client.get(f"/portal/domains/{domain.pk}/"))
    assert f'href="/portal/domains/{domain.pk}/mta-sts/"' in page
    assert 'Encrypted delivery (MTA-STS)</h2><span class="badge badge--muted">Testing</span>' in page


def test_switching_to_enforce_saves_and_names_the_record_to_update(alice_client, domain):
    response = alice_client.post(f"/portal/domains/{domain.pk}/mta-sts/", {"mode": "enforce"})
    assert (response.status_code, response["Location"]) == (302, f"/portal/domains/{domain.pk}/mta-sts/")
    domain.refresh_from_db()
    assert domain.mta_sts_mode == "enforce"
    page = page_of(alice_client.get(response["Location"]))
    assert (f"acme.test&#x27;s MTA-STS policy is now in enforce mode. Update the _mta-sts record to "
            f"{mta_sts_record_value(domain)} so senders fetch it again.") in page
    assert "mode: enforce\r\n" in page
    assert re.search(r'<input type="radio" name="mode" value="enforce"[^>]*checked', page)


def test_a_mode_that_does_not_exist_is_refused_and_changes_nothing(alice_client, domain):
    response = alice_client.post(f"/portal/domains/{domain.pk}/mta-sts/", {"mode": "strict"})
    assert response.status_code == 400
    assert "Select a valid choice. strict is not one of the available choices." in page_of(response)
    assert Domain.objects.get(pk=domain.pk).mta_sts_mode == "testing"


def test_another_partners_domain_is_404(alice_client, db):
    dora = UserFactory(email="dora@example.test", account__plan_code="premium")
    theirs = domain_add_for_partner(
        partner=hosting_partner_enable(account=dora.account, status=HostingPartner.Status.ACTIVE), name="dora.test")
    assert alice_client.get(f"/portal/domains/{theirs.pk}/mta-sts/").status_code == 404
    assert alice_client.post(f"/portal/domains/{theirs.pk}/mta-sts/", {"mode": "enforce"}).status_code == 404
    assert Domain.objects.get(pk=theirs.pk).mta_sts_mode == "testing"


def test_the_wizard_lists_the_transport_records_with_their_titles(alice_client, domain):
    page = page_of(alice_client.get(f"/portal/domains/{domain.pk}/"))
    for key, host, value, title in [
        ("mta_sts", "_mta-sts", mta_sts_record_value(domain), "Encrypted delivery (MTA-STS)"),
        ("mta_sts_host", "mta-sts", "webmail.mailwell.test", "MTA-STS policy host"),
        ("tlsrpt", "_smtp._tls", "v=TLSRPTv1; rua=mailto:tls-reports@acme.test", "TLS reports (TLS-RPT)"),
    ]:
        assert f'id="record-{key}-host" type="text" value="{host}"' in page, key
        assert f'id="record-{key}-value" type="text" value="{value}"' in page, key
        assert f'id="record-{key}-title">{title}' in page, key


def test_a_wrong_transport_record_gets_plain_words_advice(alice_client, domain, dns_zone):
    dns_zone.set("_mta-sts.acme.test", "TXT", "v=STSv1; id=old1")
    page = page_of(alice_client.post(f"/portal/domains/{domain.pk}/check/", HTTP_HX_REQUEST="true"))
    assert "The record names an earlier policy: senders keep using the policy they have until the id changes." in page
    assert "Create a CNAME record with the host mta-sts pointing to webmail.mailwell.test" in page
    assert "<strong>No TLS-RPT record.</strong>" in page


def test_an_accounts_own_verified_domain_counts_every_record(client, alice):
    make_domain(alice.account, "own.test")
    client.force_login(alice)
    assert "8 of 8 records right" in page_of(client.get("/portal/account/domains/"))
