import json
from io import StringIO

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from mailcore.accounts.models import Account, User
from mailcore.apikeys.models import ApiKey
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from mailcore.management.commands.seed_demo import MAILBOX_PASSWORD, OPERATOR, PARTNER
from mailcore.partners.models import MailboxSlot, PartnerClient
from testkit.django_process import PRODUCTION, django_process

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


def test_seeding_again_keeps_what_users_changed():
    """seed_demo --json (the README's way to get keys) never resets a password, a session or the slot pool."""
    keys = seed_json()["accounts"]
    owner = Client()
    assert owner.post("/webmail/", {"address": "hello@demo.mailwell.test", "password": MAILBOX_PASSWORD}).status_code == 302
    changed = owner.post("/webmail/settings/password/", {
        "current_password": MAILBOX_PASSWORD, "new_password": "my own password 7", "new_password_again": "my own password 7"})
    assert changed.status_code in {200, 302}
    api = APIClient()
    token = api.post("/auth/login", {"email": PARTNER["email"], "password": PARTNER["password"]},
                     format="json").json()["token"]
    operator = Client()
    operator.login(email=OPERATOR["email"], password=OPERATOR["password"])
    operator_session = operator.session.session_key
    partner = keys["partner"]
    made = api.post("/v1/hosting/mailboxes", {"domain_id": Domain.objects.get(name=partner["domain"]).pk,
                                              "local_part": "bo", "password": "bo password 1", "plan_id": "pro"},
                    format="json", HTTP_X_API_KEY=partner["api_key"])
    assert made.status_code == 201, made.content
    unused = MailboxSlot.objects.filter(status=MailboxSlot.Status.UNUSED).count()

    seed_json()
    seed_json()
    call_command("seed_demo", stdout=StringIO())

    again = Client()
    assert again.post("/webmail/", {"address": "hello@demo.mailwell.test",
                                    "password": "my own password 7"}).status_code == 302
    assert Client().post("/webmail/", {"address": "hello@demo.mailwell.test",
                                       "password": MAILBOX_PASSWORD}).status_code != 302
    assert owner.get("/webmail/inbox/").status_code == 200
    assert api.get("/subscriptions/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    assert Session.objects.filter(session_key=operator_session).exists()
    assert operator.get("/").wsgi_request.user.email == OPERATOR["email"]
    assert MailboxSlot.objects.filter(status=MailboxSlot.Status.UNUSED).count() == unused


def test_printing_keys_changes_nothing_but_the_keys():
    call_command("seed_demo", stdout=StringIO())
    before = {model.__name__: list(model.objects.order_by("pk").values())
              for model in (Account, User, Domain, Mailbox, PartnerClient)}
    seed_json()
    after = {model.__name__: list(model.objects.order_by("pk").values())
             for model in (Account, User, Domain, Mailbox, PartnerClient)}
    assert after == before
    assert ApiKey.objects.count() == 2


def test_production_never_seeds_the_demo(tmp_path):
    result = django_process(["manage.py", "seed_demo"], {**PRODUCTION, "DATA_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "seed_demo refuses to run with DJANGO_ENV=production" in result.stderr
    assert "operator-pass-2026" not in result.stdout + result.stderr
