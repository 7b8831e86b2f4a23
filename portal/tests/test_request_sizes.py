"""Request bodies are bounded everywhere: over DATA_UPLOAD_MAX_MEMORY_SIZE (or Django's field and
file counts) every surface answers 413 and nothing is done. The JSON APIs answer {"detail"}, pages
answer a page that says what to do. DAV's own bound is in dav/tests/test_dav_access.py."""
import json

import pytest
from django.test import Client

from mailcore.outbound.models import OutboundMessage
from testkit.clients import new_key
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

LIMIT = 10_000
HTML = {"HTTP_ACCEPT": "text/html"}


@pytest.fixture
def small_limit(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT


@pytest.fixture
def signed_in(alice):
    client = Client()
    client.force_login(alice)
    return client


@pytest.mark.parametrize("path", ["/mail/send", "/mcp", "/auth/login", "/contacts", "/labels"])
def test_an_oversized_json_body_is_413_with_detail(small_limit, alice, client, path):
    key = new_key(alice, scopes=["send", "contacts:write", "mailboxes:write"])
    body = json.dumps({"subject": "x" * (2 * LIMIT)})

    response = client.post(path, body, content_type="application/json", HTTP_X_API_KEY=key)

    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is too large."}


def test_an_oversized_send_queues_nothing(small_limit, alice, client):
    mailbox = make_mailbox(alice.account, "ann@example.test")
    body = json.dumps({"from": mailbox.address, "to": ["x@elsewhere.test"], "subject": "Hi",
                       "text": "x" * (2 * LIMIT)})

    response = client.post("/mail/send", body, content_type="application/json",
                           HTTP_X_API_KEY=new_key(alice, scopes=["send"]))

    assert response.status_code == 413
    assert not OutboundMessage.objects.exists()


@pytest.mark.parametrize("path", ["/webmail/", "/accounts/login/"])
def test_an_oversized_sign_in_form_is_a_413_page_and_signs_no_one_in(small_limit, client, path):
    response = client.post(path, {"login": "alice@example.test", "address": "alice@example.test",
                                  "password": "x" * (2 * LIMIT)}, **HTML)

    assert response.status_code == 413
    assert "That was too large to send" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_an_oversized_portal_form_is_a_413_page_and_adds_nothing(small_limit, signed_in, alice):
    response = signed_in.post("/portal/webhooks/", {"url": "https://hooks.example/" + "x" * (2 * LIMIT)}, **HTML)

    assert response.status_code == 413
    assert not alice.account.webhook_endpoints.exists()


def test_too_many_form_fields_is_413(settings, signed_in):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 100
    response = signed_in.post("/portal/webhooks/", {f"f{n}": "x" for n in range(150)}, **HTML)

    assert response.status_code == 413
