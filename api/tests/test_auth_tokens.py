"""POST /auth/login and /auth/logout, and Bearer tokens on session-only endpoints."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from mailcore.apikeys.models import SessionToken
from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def login(api, email, password=PASSWORD, **extra):
    return api.post("/auth/login", {"email": email, "password": password}, format="json", **extra)


def test_it_returns_a_token_and_its_expiry_for_the_right_password(api, alice):
    response = login(api, alice.email)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "expires_at"}
    assert body["token"].startswith("st_")
    assert body["expires_at"].endswith("Z")
    token = SessionToken.objects.get(user=alice)
    assert token.token_digest not in body["token"]  # only the digest is stored


def test_it_answers_401_to_a_wrong_password_and_to_an_unknown_email(api, alice):
    assert login(api, alice.email, "wrong password").status_code == 401
    response = login(api, "nobody@example.test")
    assert response.status_code == 401
    assert response.json() == {"detail": "Wrong email or password."}
    assert SessionToken.objects.count() == 0


def test_it_refuses_a_token_until_the_email_is_verified(api):
    user = UserFactory(verified=False)
    response = login(api, user.email)
    assert response.status_code == 403
    assert "Verify your email" in response.json()["detail"]


def test_repeated_failures_get_429_with_retry_after(api, alice, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        assert login(api, alice.email, "wrong").status_code == 401
    response = login(api, alice.email)  # even the right password is refused while throttled
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many failed logins" in response.json()["detail"]
    assert SessionToken.objects.count() == 0


def test_failures_from_one_address_are_throttled_across_emails(api, alice, settings):
    settings.LOGIN_FAILURE_IP_LIMIT = 3
    for n in range(3):
        login(api, f"guess{n}@example.test", "wrong")
    assert login(api, alice.email).status_code == 429
    assert login(api, alice.email, REMOTE_ADDR="198.51.100.9").status_code == 200


def test_a_bearer_token_authenticates_a_session_only_endpoint(api, alice):
    token = login(api, alice.email).json()["token"]
    response = api.get("/api-keys", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response.json() == []


def test_logout_revokes_the_token(api, alice):
    token = login(api, alice.email).json()["token"]
    assert api.post("/auth/logout", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 204
    response = api.get("/api-keys", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 401
    assert "expired or was revoked" in response.json()["detail"]


def test_an_expired_token_is_401(api, alice):
    token = login(api, alice.email).json()["token"]
    with time_machine.travel(timezone.now() + timedelta(days=31)):
        assert api.get("/api-keys", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_a_forged_or_malformed_token_is_401(api, alice):
    token = login(api, alice.email).json()["token"]
    forged = token[:-4] + ("aaaa" if not token.endswith("aaaa") else "bbbb")
    for value in (forged, "st_nonsense", "", "mk_" + "a" * 60):
        response = api.get("/api-keys", HTTP_AUTHORIZATION=f"Bearer {value}")
        assert response.status_code == 401, value
        assert isinstance(response.json()["detail"], str)


def test_the_portal_cookie_session_works_with_csrf(alice):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.get("/api-keys").status_code == 200
    refused = client.post("/api-keys", {"name": "no csrf"}, format="json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]
    csrf = "k" * 32
    client.cookies["csrftoken"] = csrf
    accepted = client.post("/api-keys", {"name": "with csrf"}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert accepted.status_code == 201
