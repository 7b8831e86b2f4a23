"""What an integrator gets for out-of-range numbers, over-long host names and wrong JSON types:
a 4xx with {"detail"} that names the problem, and nothing changed. Never a 500, never a coercion."""
import pytest
from rest_framework.test import APIClient

from testkit.clients import login_client, new_key
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.mailboxes.models import Mailbox
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.services import slots_grant
from mailcore.sending.models import MailTemplate
from mailcore.outbound.models import OutboundMessage
from mailcore.store.factory import store_for
from testkit.factories import UserFactory, make_mailbox, make_message
from mailcore.events.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

ADDRESS = "box@example.test"
HUGE = ["99999999999999999999", "9223372036854775807", "1000001"]


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, ADDRESS)


@pytest.fixture
def key(alice, mailbox):
    return new_key(alice, scopes=["send", "mailboxes:read", "mailboxes:write"])


@pytest.fixture
def partner_api(db):
    user = UserFactory(email="reseller@example.test", account__plan_code="premium")
    partner = hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    slots_grant(partner=partner, count=2)
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name="client.test"))
    created = partner_mailbox_open(partner=partner, domain=domain, local_part="ann", password="ann password 1",
                                     plan_id="pro")
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(user, scopes=[
        "partner:mailboxes:read", "partner:mailboxes:write", "partner:domains:read", "partner:domains:write"]))
    client.mailbox_id, client.domain_id = created.pk, domain.pk
    return client


# paging


@pytest.mark.parametrize("number", HUGE)  # not "page": that is pytest-playwright's fixture
def test_a_huge_page_number_is_422_on_every_paged_endpoint(api, key, mailbox, partner_api, number):
    answers = [
        api.get("/inbox", {"email": ADDRESS, "page": number}, HTTP_X_API_KEY=key),
        api.get("/mail/templates", {"page": number}, HTTP_X_API_KEY=key),
        partner_api.get(f"/v1/hosting/mailboxes/{partner_api.mailbox_id}/aliases", {"page": number}),
    ]
    for response in answers:
        assert response.status_code == 422, response.content
        assert "page" in response.json()["errors"] and "1000000" in response.json()["detail"]


def test_a_page_past_the_end_is_empty_with_the_true_total(api, key, mailbox, partner_api):
    store_for(mailbox).append("INBOX", make_message(subject="only one"))
    inbox = api.get("/inbox", {"email": ADDRESS, "page": 1000000}, HTTP_X_API_KEY=key).json()
    assert (inbox["messages"], inbox["total"], inbox["page"]) == ([], 1, 1000000)
    templates = api.get("/mail/templates", {"page": 1000000, "per_page": 100}, HTTP_X_API_KEY=key).json()
    assert (templates["templates"], templates["total"]) == ([], 0)
    aliases = partner_api.get(f"/v1/hosting/mailboxes/{partner_api.mailbox_id}/aliases", {"page": 1000000}).json()
    assert (aliases["aliases"], aliases["total"]) == ([], 0)


@pytest.mark.parametrize("path", ["/inbox/99999999999999999999", "/mail/scheduled/99999999999999999999",
                                  "/mail/templates/9223372036854775808", "/labels/99999999999999999999"])
def test_a_huge_id_in_the_path_is_404(api, key, mailbox, path):
    call = api.delete if "scheduled" in path or "labels" in path else api.get
    response = call(path + f"?email={ADDRESS}", HTTP_X_API_KEY=key)
    assert response.status_code == 404 and "detail" in response.json()


# host names


@pytest.mark.parametrize("host, words", [
    ("a" * 64 + ".example.test", "longer than 63"),
    (".".join(["a" * 60] * 5), "at most 253"),
    ("bad host.test", "is not a host name"),
    ("-lead.test", "is not a valid host name"),
    ("xn--.test", "is not a valid host name"),
])
def test_an_imap_host_that_is_not_a_host_name_is_422(api, key, host, words):
    response = api.post("/mailboxes/connected", {"email": "me@elsewhere.test", "imap_host": host,
                                                 "username": "me", "password": "secret"},
                        format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 422, response.content
    assert "imap_host" in response.json()["errors"]
    assert words in str(response.json()["errors"]["imap_host"]) or "253" in str(response.json()["errors"])
    assert not Mailbox.objects.filter(address="me@elsewhere.test").exists()


def test_an_over_long_imap_host_is_422_not_500(api, key):
    response = api.post("/mailboxes/connected", {"email": "me@elsewhere.test", "imap_host": "a" * 256,
                                                 "username": "me", "password": "secret"},
                        format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 422 and "imap_host" in response.json()["errors"]


# JSON types


@pytest.mark.parametrize("field, value, expected", [
    ("sandbox", "yes", "must be a boolean, not a string"),
    ("sandbox", 1, "must be a boolean, not a number"),
    ("track_opens", "true", "must be a boolean, not a string"),
    ("unsend_window", "10", "must be an integer, not a string"),
    ("unsend_window", 10.0, "must be an integer, not a number"),
    ("unsend_window", True, "must be an integer, not a boolean"),
    ("subject", 123, "must be a string, not a number"),
    ("to", "bob@remote.test", "must be a list, not a string"),
    ("template_id", "1", "must be an integer, not a string"),
    ("variables", ["x"], "must be an object, not a list"),
])
def test_a_send_field_of_the_wrong_json_type_is_422_and_nothing_is_queued(api, key, field, value, expected):
    body = {"from_email": ADDRESS, "to": ["bob@remote.test"], "subject": "s", "body_text": "b", field: value}
    response = api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 422
    assert response.json()["errors"][field] == [expected]
    assert OutboundMessage.objects.count() == 0


def test_a_list_item_of_the_wrong_type_is_named_by_its_index(api, key):
    body = {"from_email": ADDRESS, "to": ["bob@remote.test", 7], "subject": "s", "body_text": "b"}
    response = api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 422
    assert response.json()["errors"]["to"] == {"1": ["must be a string, not a number"]}
    assert "to.1: must be a string" in response.json()["detail"]


@pytest.mark.parametrize("change", [{"seen": "yes"}, {"starred": 1}, {"folder": 5}, {"labels": ["1"]}])
def test_patching_a_message_with_the_wrong_types_is_422_and_changes_nothing(api, key, mailbox, change):
    uid = store_for(mailbox).append("INBOX", make_message(subject="x"))
    response = api.patch(f"/inbox/{uid}?email={ADDRESS}", change, format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 422 and list(change) == list(response.json()["errors"])
    message = api.get(f"/inbox/{uid}", {"email": ADDRESS}, HTTP_X_API_KEY=key).json()
    assert (message["seen"], message["starred"], message["folder"]) == (False, False, "INBOX")


def test_a_template_name_that_is_a_number_is_422(api, key):
    response = api.post("/mail/templates", {"name": 123, "body_html": "<p>x</p>"}, format="json",
                        HTTP_X_API_KEY=key)
    assert response.status_code == 422 and response.json()["errors"]["name"] == ["must be a string, not a number"]
    assert MailTemplate.objects.count() == 0


def test_partner_fields_are_strict_too(partner_api):
    domain = partner_api.post("/v1/hosting/domains", {"domain_name": 123}, format="json")
    assert domain.status_code == 422 and "domain_name" in domain.json()["errors"]
    mailbox = partner_api.post("/v1/hosting/mailboxes", {"domain_id": str(partner_api.domain_id), "local_part": "bo",
                                                         "password": "bo password 1", "plan_id": "pro"}, format="json")
    assert mailbox.status_code == 422 and mailbox.json()["errors"]["domain_id"] == ["must be an integer, not a string"]
    assert not Mailbox.objects.filter(local_part="bo").exists()


def test_webhook_and_key_bodies_are_strict(alice):
    client = login_client(alice)
    response = client.post("/webhooks", {"url": "https://example.com/h", "events": "email.sent"}, format="json")
    assert response.status_code == 422 and "events" in response.json()["errors"]
    assert WebhookEndpoint.objects.count() == 0
    key = client.post("/api-keys", {"name": "k"}, format="json").json()
    response = client.patch(f"/api-keys/{key['id']}", {"is_active": "false"}, format="json")
    assert response.status_code == 422 and client.get("/api-keys").json()[0]["is_active"] is True


def test_the_schema_says_bodies_are_strictly_typed(api):
    schema = api.get("/openapi.json").json()
    assert "strict" in schema["info"]["description"].lower()
    send = schema["components"]["schemas"]["SendInputRequest"]["properties"]
    assert (send["sandbox"]["type"], send["unsend_window"]["type"], send["to"]["type"]) == (
        "boolean", "integer", "array")


# session-only endpoints


@pytest.mark.parametrize("path", ["/api-keys", "/auth/logout"])
def test_an_api_key_on_a_session_only_endpoint_is_told_it_needs_a_session(api, key, path):
    call = api.get if path == "/api-keys" else api.post
    response = call(path, HTTP_X_API_KEY=key)
    assert response.status_code == 401
    assert "needs a session" in response.json()["detail"] and "/auth/login" in response.json()["detail"]
