"""/v1/hosting: a domain created as an alias of another of the same client, and a domain's catch-all
mailbox set and cleared; bad input is 422 and changes nothing, another partner's domain is 404."""
import pytest

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import HostingPartner, PartnerClient
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import new_key
from testkit.factories import UserFactory, make_domain, make_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def hosting(api, alice, partner):
    partner.extra_domain_slots = 5
    partner.save()
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    return api


@pytest.fixture
def stranger_domain(db):
    user = UserFactory(account__plan_code="premium")
    hosting_partner_enable(account=user.account)
    return make_domain(user.account, "theirs.test")


def add(hosting, name, **fields):
    return hosting.post("/v1/hosting/domains", {"domain_name": name, **fields}, format="json")


def test_a_domain_is_created_as_an_alias_of_another_for_the_same_client(hosting):
    primary = add(hosting, "primary.test").json()
    alias = add(hosting, "alias.test", alias_of=primary["id"])
    assert alias.status_code == 201
    body = alias.json()
    assert (body["alias_of"], body["client_id"], body["status"], body["catch_all"]) == (
        primary["id"], primary["client_id"], "pending", None)
    assert {r["type"] for r in body["dns_records"]} >= {"MX", "TXT"}  # verified by DNS like any domain
    assert hosting.get(f"/v1/hosting/domains/{primary['id']}").json()["alias_of"] is None


def test_an_alias_of_an_alias_is_refused_and_nothing_is_created(hosting):
    primary = add(hosting, "primary.test").json()
    alias = add(hosting, "alias.test", alias_of=primary["id"]).json()
    response = add(hosting, "chain.test", alias_of=alias["id"])
    assert response.status_code == 422
    assert "alias_of" in response.json()["errors"] and "itself an alias" in response.json()["detail"]
    assert not Domain.objects.filter(name="chain.test").exists()


def test_another_partners_domain_or_client_is_refused_as_alias_target(hosting, stranger_domain, partner):
    response = add(hosting, "alias.test", alias_of=stranger_domain.pk)
    assert (response.status_code, response.json()["errors"]) == (422, {"alias_of": ["not a domain of this account"]})
    primary = add(hosting, "primary.test").json()
    other_client = PartnerClient.objects.create(partner=partner, name="Someone else")
    response = add(hosting, "alias.test", alias_of=primary["id"], client_id=other_client.pk)
    assert response.status_code == 422 and "client_id" in response.json()["errors"]
    assert not Domain.objects.filter(name="alias.test").exists()
    assert PartnerClient.objects.filter(partner=partner).count() == 2  # no client made for the refused ones


def test_the_catch_all_is_set_to_a_mailbox_of_the_domain_and_cleared(hosting, alice):
    primary = add(hosting, "primary.test").json()
    Domain.objects.filter(pk=primary["id"]).update(status=Domain.Status.VERIFIED)
    make_mailbox(alice.account, "all@primary.test")
    url = f"/v1/hosting/domains/{primary['id']}/catch-all"
    response = hosting.put(url, {"address": "All@primary.test"}, format="json")
    assert (response.status_code, response.json()["catch_all"]) == (200, "all@primary.test")
    assert hosting.get(f"/v1/hosting/domains/{primary['id']}").json()["catch_all"] == "all@primary.test"
    cleared = hosting.delete(url)
    assert (cleared.status_code, cleared.json()["catch_all"]) == (200, None)
    assert Domain.objects.get(pk=primary["id"]).catch_all is None


def test_a_catch_all_must_be_an_active_mailbox_of_that_domain_and_not_on_an_alias(hosting, alice):
    primary = add(hosting, "primary.test").json()
    alias = add(hosting, "alias.test", alias_of=primary["id"]).json()
    make_mailbox(alice.account, "ann@elsewhere.test")
    make_mailbox(alice.account, "off@primary.test")
    Mailbox.objects.filter(address="off@primary.test").update(is_active=False)
    url = f"/v1/hosting/domains/{primary['id']}/catch-all"
    for body in ({"address": "ann@elsewhere.test"}, {"address": "off@primary.test"}, {"address": "nobody@primary.test"},
                 {"address": "not an address"}, {}, {"address": "ann@elsewhere.test", "extra": 1}):
        response = hosting.put(url, body, format="json")
        assert response.status_code == 422, body
        assert "detail" in response.json()
    make_mailbox(alice.account, "all@primary.test")
    response = hosting.put(f"/v1/hosting/domains/{alias['id']}/catch-all", {"address": "all@primary.test"},
                           format="json")
    assert response.status_code == 422 and "follows primary.test's catch-all" in response.json()["detail"]
    assert Domain.objects.filter(catch_all__isnull=False).count() == 0


def test_another_partners_domain_is_404_for_the_catch_all(hosting, stranger_domain):
    url = f"/v1/hosting/domains/{stranger_domain.pk}/catch-all"
    assert hosting.put(url, {"address": "a@theirs.test"}, format="json").status_code == 404
    assert hosting.delete(url).status_code == 404


def test_a_primary_with_alias_domains_cannot_be_deleted_first(hosting):
    primary = add(hosting, "primary.test").json()
    alias = add(hosting, "alias.test", alias_of=primary["id"]).json()
    response = hosting.delete(f"/v1/hosting/domains/{primary['id']}")
    assert response.status_code == 409 and "alias.test" in response.json()["detail"]
    assert hosting.delete(f"/v1/hosting/domains/{alias['id']}").status_code == 204
    assert hosting.delete(f"/v1/hosting/domains/{primary['id']}").status_code == 204


def test_the_schema_states_the_alias_and_catch_all_constraints(api):
    schema = api.get("/openapi.json").json()
    create = schema["paths"]["/v1/hosting/domains"]["post"]
    assert "422" in create["summary"] and "alias_of" in create["description"]
    catch_all = schema["paths"]["/v1/hosting/domains/{domain_id}/catch-all"]
    assert set(catch_all) >= {"put", "delete"} and "spam" in catch_all["put"]["description"]
    assert "422" in catch_all["put"]["responses"]
    inputs = schema["components"]["schemas"]["CatchAllInputRequest"]
    assert inputs["required"] == ["address"] and inputs["properties"]["address"]["format"] == "email"
    output = schema["components"]["schemas"]["DomainOutput"]["properties"]
    assert output["alias_of"]["nullable"] and output["catch_all"]["nullable"] and output["tracking_host"]["nullable"]
