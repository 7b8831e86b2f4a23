"""The portal's domain pages for catch-all addresses and alias domains: the risk said plainly, the
catch-all set and turned off, a domain added as an alias of another, the same services as the API."""
import pytest

from billing.services.mailboxes import partner_mailbox_open
from mailcore.domains.models import Domain
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    partner.extra_domain_slots = 3
    partner.save()
    return partner


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def primary(partner):
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name="primary.test"))
    slots_grant(partner=partner, count=1)
    partner_mailbox_open(partner=partner, domain=domain, local_part="all", password="correct-horse", plan_id="pro")
    return domain


def test_the_domain_page_says_the_catch_all_risk_and_sets_it(alice_client, primary):
    page = alice_client.get(f"/portal/domains/{primary.pk}/").content.decode()
    assert "Catch-all address" in page and "every message to a made-up address on primary.test lands in one mailbox" in page
    assert "Now: off." in page and '<option value="all@primary.test"' in page

    response = alice_client.post(f"/portal/domains/{primary.pk}/catch-all/", {"address": "all@primary.test"})
    assert (response.status_code, response["Location"]) == (302, f"/portal/domains/{primary.pk}/")
    assert Domain.objects.get(pk=primary.pk).catch_all.address == "all@primary.test"
    page = alice_client.get(f"/portal/domains/{primary.pk}/").content.decode()
    assert "Mail to unknown addresses on primary.test now goes to all@primary.test." in page
    assert "mail to unknown addresses goes to <strong>all@primary.test</strong>" in page

    alice_client.post(f"/portal/domains/{primary.pk}/catch-all/", {"clear": "1"})
    assert Domain.objects.get(pk=primary.pk).catch_all is None


def test_an_address_that_is_not_one_of_the_domains_mailboxes_is_refused_on_the_page(alice_client, primary):
    response = alice_client.post(f"/portal/domains/{primary.pk}/catch-all/", {"address": "ann@elsewhere.test"})
    assert response.status_code == 422 and "Select a valid choice" in response.content.decode()
    htmx = alice_client.post(f"/portal/domains/{primary.pk}/catch-all/", {"address": "x@primary.test"},
                             HTTP_HX_REQUEST="true")
    assert htmx.status_code == 200 and 'id="domain-catch-all"' in htmx.content.decode()
    assert Domain.objects.get(pk=primary.pk).catch_all is None


def test_a_domain_is_added_as_an_alias_and_its_page_says_so(alice_client, primary):
    page = alice_client.get("/portal/domains/").content.decode()
    assert f'<option value="{primary.pk}">primary.test</option>' in page
    response = alice_client.post("/portal/domains/", {"name": "alias.test", "client": "", "alias_of": primary.pk})
    alias = Domain.objects.get(name="alias.test")
    assert response.status_code == 302 and (alias.alias_of, alias.client) == (primary, primary.client)
    page = alice_client.get(f"/portal/domains/{alias.pk}/").content.decode()
    assert "alias.test is an alias of" in page and "once this domain is verified" in page
    assert "Set catch-all" not in page

    page = alice_client.get("/portal/domains/").content.decode()
    assert f'<option value="{alias.pk}">' not in page  # no chains: an alias is not offered as a primary


def test_another_partners_domain_cannot_be_chosen_as_primary(alice_client, primary):
    user = UserFactory(account__plan_code="premium")
    hosting_partner_enable(account=user.account)
    theirs = make_domain(user.account, "theirs.test")
    response = alice_client.post("/portal/domains/", {"name": "alias.test", "client": "", "alias_of": theirs.pk})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Domain.objects.filter(name="alias.test").exists()


def test_another_partners_domain_page_and_catch_all_are_404(client, primary):
    user = UserFactory(account__plan_code="premium")
    hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    client.force_login(user)
    assert client.get(f"/portal/domains/{primary.pk}/").status_code == 404
    assert client.post(f"/portal/domains/{primary.pk}/catch-all/", {"address": "all@primary.test"}).status_code == 404
    assert Domain.objects.get(pk=primary.pk).catch_all is None
