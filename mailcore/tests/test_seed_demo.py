import json
from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from mailcore.accounts.models import Account, User
from mailcore.apikeys.models import ApiKey
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import PartnerClient

pytestmark = pytest.mark.django_db


def seed_json() -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", stdout=out)
    return json.loads(out.getvalue())  # exactly one JSON object, nothing else


def test_it_is_idempotent():
    call_command("seed_demo", stdout=StringIO())
    counts = [Account.objects.count(), User.objects.count(), Domain.objects.count(), Mailbox.objects.count(),
              PartnerClient.objects.count()]
    call_command("seed_demo", stdout=StringIO())
    assert [Account.objects.count(), User.objects.count(), Domain.objects.count(), Mailbox.objects.count(),
            PartnerClient.objects.count()] == counts == [4, 4, 2, 2, 1]  # + operator, applicant
    assert ApiKey.objects.count() == 0


def test_json_output_has_the_documented_shape_and_working_keys():
    first, second = seed_json(), seed_json()
    premium, partner = first["accounts"]["premium"], first["accounts"]["partner"]
    assert set(premium) == {"email", "password", "api_key", "domain", "mailboxes"}
    assert set(partner) == {"email", "password", "api_key", "client_id", "domain"}
    assert premium["mailboxes"] == ["hello@demo.mailwell.test", "support@demo.mailwell.test"]
    assert Domain.objects.get(name=premium["domain"]).is_verified
    assert PartnerClient.objects.get(pk=partner["client_id"]).partner.status == "active"
    assert second["accounts"]["premium"]["api_key"] != premium["api_key"]  # new on every call
    api = APIClient()
    me = api.get("/subscriptions/me", HTTP_X_API_KEY=premium["api_key"]).json()
    assert me["plan"] == "premium"
    assert api.get("/subscriptions/me", HTTP_X_API_KEY=partner["api_key"]).json()["hosting_partner_status"] == "active"
    partner_key = ApiKey.objects.get(key_prefix=partner["api_key"][:15])
    assert "partner:settings:write" in partner_key.scopes and "send" in partner_key.scopes
    assert not any(scope.startswith("partner:") for scope in ApiKey.objects.get(key_prefix=premium["api_key"][:15]).scopes)


def test_the_demo_passwords_log_in():
    accounts = seed_json()["accounts"]
    api = APIClient()
    for account in accounts.values():
        response = api.post("/auth/login", {"email": account["email"], "password": account["password"]}, format="json")
        assert response.status_code == 200


def test_the_demo_mailbox_has_contacts_and_a_calendar_once():
    call_command("seed_demo", stdout=StringIO())
    call_command("seed_demo", stdout=StringIO())
    hello = Mailbox.objects.get(address="hello@demo.mailwell.test")
    assert sorted(hello.address_books.get().contacts.values_list("name", flat=True)) == [
        "Amy Baker", "Ben Okafor", "Chioma Eze"]
    assert sorted(hello.calendars.get().events.values_list("title", flat=True)) == [
        "Bakery delivery", "Market day", "Team standup"]
