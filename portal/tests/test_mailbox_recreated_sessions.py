"""Deleting a mailbox ends every session it opened, and an address the partner creates again starts
with none: the first owner's "keep me signed in" cookie and DAV password open nothing of the new
holder's, even when the partner happens to choose the same password again."""
import base64

import pytest
from django.test import Client
from rest_framework.test import APIClient

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.clients import new_key
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db
DAVE = "dave@acme.test"
FIRST = "first owner's password"


@pytest.fixture
def partner_browser(alice):
    partner = hosting_partner_enable(account=alice.account, status="active")
    slots_grant(partner=partner, count=2)
    domain = make_domain(partner.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    browser = Client()
    browser.force_login(alice)
    browser.domain = domain
    return browser


def create_dave(partner_browser, password: str) -> PartnerMailbox:
    response = partner_browser.post("/portal/mailboxes/new/", {
        "domain": partner_browser.domain.pk, "local_part": "dave", "password": password, "plan_id": "pro"})
    assert response.status_code == 302, response.content.decode()
    return PartnerMailbox.objects.get(mailbox__address=DAVE)


def delete_dave(partner_browser) -> None:
    partner_mailbox = PartnerMailbox.objects.get(mailbox__address=DAVE)
    assert partner_browser.post(f"/portal/mailboxes/{partner_mailbox.pk}/delete/").status_code == 302


def webmail_sign_in(password: str) -> tuple[Client, int]:
    browser = Client()
    response = browser.post("/webmail/", {"address": DAVE, "password": password, "remember": "on"})
    return browser, response.status_code


def dav_status(password: str) -> int:
    credentials = base64.b64encode(f"{DAVE}:{password}".encode()).decode()
    return Client().generic("PROPFIND", "/dav/", "", HTTP_AUTHORIZATION=f"Basic {credentials}",
                            HTTP_DEPTH="0").status_code


def signed_in(browser: Client) -> bool:
    return browser.get("/webmail/inbox/").status_code == 200


@pytest.mark.parametrize("second", ["second owner's password", FIRST])
def test_a_recreated_address_does_not_open_for_the_first_owners_cookie_or_password(partner_browser, second):
    create_dave(partner_browser, FIRST)
    first_owner, status = webmail_sign_in(FIRST)
    assert status == 302 and signed_in(first_owner)
    assert dav_status(FIRST) == 207

    delete_dave(partner_browser)

    assert not signed_in(first_owner)
    assert webmail_sign_in(FIRST)[1] == 401
    assert dav_status(FIRST) == 401

    create_dave(partner_browser, second)

    assert not signed_in(first_owner)
    new_holder, status = webmail_sign_in(second)
    assert status == 302 and signed_in(new_holder)
    assert not signed_in(first_owner)
    if second != FIRST:
        assert webmail_sign_in(FIRST)[1] == 401
        assert dav_status(FIRST) == 401
    assert dav_status(second) == 207


def test_an_unknown_and_a_deleted_address_get_the_same_answer_as_a_wrong_password(partner_browser):
    create_dave(partner_browser, FIRST)
    delete_dave(partner_browser)

    deleted = Client().post("/webmail/", {"address": DAVE, "password": FIRST})
    unknown = Client().post("/webmail/", {"address": "nobody@acme.test", "password": FIRST})

    assert deleted.status_code == unknown.status_code == 401
    assert "Wrong address or password" in deleted.content.decode()
    assert "Wrong address or password" in unknown.content.decode()


def test_deleting_and_recreating_through_the_hosting_api_signs_the_first_owner_out_too(partner_browser, alice):
    hosting = APIClient()
    hosting.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    create_dave(partner_browser, FIRST)
    first_owner, _ = webmail_sign_in(FIRST)
    assert signed_in(first_owner)

    assert hosting.delete(f"/v1/hosting/mailboxes/{PartnerMailbox.objects.get().pk}").status_code == 204
    recreated = hosting.post("/v1/hosting/mailboxes", {
        "domain_id": partner_browser.domain.pk, "local_part": "dave", "password": FIRST, "plan_id": "pro"},
        format="json")

    assert recreated.status_code == 201, recreated.json()
    assert not signed_in(first_owner)
    assert dav_status(FIRST) == 207  # the same password, given again, works for the new holder's apps
