"""A changed or reset account password ends every session the old one opened: the JSON API's
bearer tokens from POST /auth/login and the portal's signed-in browsers, except the browser that
made the change. Seen through the API and the portal's own pages."""
import re

import pytest
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from mailcore.apikeys.models import ApiKey
from testkit.factories import PASSWORD

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a brand new password 9"


def token_for(email: str, password: str = PASSWORD) -> str:
    response = APIClient().post("/auth/login", {"email": email, "password": password}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def portal_browser(email: str, password: str = PASSWORD) -> Client:
    browser = Client()
    assert browser.post("/accounts/login/", {"login": email, "password": password}).status_code == 302
    assert browser.get("/").status_code == 200
    return browser


def change_password(browser: Client):
    return browser.post("/accounts/password/change/", {
        "oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD})


def test_a_password_change_ends_every_token_and_other_browser_but_not_the_one_that_changed_it(alice):
    phone, laptop = token_for(alice.email), token_for(alice.email)
    assert bearer(phone).get("/api-keys").status_code == 200
    changing, other_browser = portal_browser(alice.email), portal_browser(alice.email)

    assert change_password(changing).status_code == 302

    for token in (phone, laptop):
        refused = bearer(token).get("/api-keys")
        assert refused.status_code == 401
        assert refused.json() == {
            "detail": "The password changed since this session token was issued; log in again."}
    minted = bearer(phone).post("/api-keys", {"name": "after the change"}, format="json")
    assert minted.status_code == 401
    assert not ApiKey.objects.filter(name="after the change").exists()
    assert changing.get("/").status_code == 200
    assert other_browser.get("/").status_code == 302
    fresh = token_for(alice.email, NEW_PASSWORD)
    assert bearer(fresh).post("/api-keys", {"name": "after the change"}, format="json").status_code == 201


def test_a_password_reset_by_email_ends_every_token_and_signed_in_browser(alice):
    token, browser = token_for(alice.email), portal_browser(alice.email)
    resetting = Client()
    resetting.post("/accounts/password/reset/", {"email": alice.email})
    link = re.search(r"https?://testserver(/\S+)", mail.outbox[-1].body).group(1)
    form = resetting.get(link, follow=True)
    action = form.redirect_chain[-1][0] if form.redirect_chain else link

    done = resetting.post(action, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})

    assert done.status_code == 302
    assert bearer(token).get("/api-keys").status_code == 401
    assert bearer(token).post("/api-keys", {"name": "after the reset"}, format="json").status_code == 401
    assert browser.get("/").status_code == 302
    assert not ApiKey.objects.filter(name="after the reset").exists()
    assert bearer(token_for(alice.email, NEW_PASSWORD)).get("/api-keys").status_code == 200


def test_another_users_tokens_are_left_alone(alice, bob):
    bobs = token_for(bob.email)

    assert change_password(portal_browser(alice.email)).status_code == 302

    assert bearer(bobs).get("/api-keys").status_code == 200


def test_a_wrong_current_password_changes_nothing_and_ends_nothing(alice):
    token, browser = token_for(alice.email), portal_browser(alice.email)

    refused = browser.post("/accounts/password/change/", {
        "oldpassword": "not it", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD})

    assert refused.status_code == 200
    assert bearer(token).get("/api-keys").status_code == 200
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)
