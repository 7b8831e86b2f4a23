"""Sign-up, email verification, login, logout and password reset through the portal's pages."""
from datetime import timedelta
import re

import pytest
from django.core import mail

from mailcore.accounts.models import User
from testkit.factories import PASSWORD

pytestmark = pytest.mark.django_db


def link_in(message) -> str:
    return re.search(r"https?://testserver(/\S+)", message.body).group(1)


def test_sign_up_creates_an_account_on_the_free_plan_and_asks_to_verify(client):
    response = client.post(
        "/accounts/signup/", {"email": "dana@example.test", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    user = User.objects.get(email="dana@example.test")
    assert user.account.plan.code == "free"
    assert user.account.users.count() == 1
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["dana@example.test"]
    # the dashboard stays closed until the address is confirmed
    assert client.get("/").status_code == 302


def test_the_verification_mail_greets_from_the_product_not_the_host(client):
    client.post("/accounts/signup/", {"email": "dana@example.test", "password1": PASSWORD, "password2": PASSWORD},
                HTTP_HOST="127.0.0.1:8211")
    message = mail.outbox[0]
    assert message.body.startswith("Hello from Mailwell!")
    assert "Thank you for using Mailwell!" in message.body
    assert message.subject.startswith("[Mailwell] ")
    assert "127.0.0.1:8211!" not in message.body and "[127.0.0.1" not in message.subject


def test_the_verification_mail_names_the_product_everywhere_and_links_to_the_public_address(client):
    client.post("/accounts/signup/", {"email": "dana@example.test", "password1": PASSWORD, "password2": PASSWORD},
                HTTP_HOST="127.0.0.1:8211")
    body = mail.outbox[0].body
    assert "has given your email address to register an account on Mailwell." in body
    assert body.rstrip().endswith("Thank you for using Mailwell!")
    links = re.findall(r"https?://127\.0\.0\.1:8211/\S+", body)
    assert len(links) == 1 and "/accounts/confirm-email/" in links[0]
    assert body.replace(links[0], "").count("127.0.0.1") == 0


def test_the_password_reset_mail_is_signed_with_the_product_name(client, alice):
    client.post("/accounts/password/reset/", {"email": alice.email}, HTTP_HOST="127.0.0.1:8211")
    body = mail.outbox[0].body
    assert body.startswith("Hello from Mailwell!") and body.rstrip().endswith("Thank you for using Mailwell!")
    links = re.findall(r"https?://127\.0\.0\.1:8211/\S+", body)
    assert len(links) == 1 and body.replace(links[0], "").count("127.0.0.1") == 0


def test_confirming_the_email_logs_in_and_opens_the_dashboard(client):
    client.post("/accounts/signup/", {"email": "dana@example.test", "password1": PASSWORD, "password2": PASSWORD})
    confirm = link_in(mail.outbox[0])
    assert client.post(confirm).status_code == 302
    dashboard = client.get("/")
    assert dashboard.status_code == 200
    assert "dana@example.test" in dashboard.content.decode()


def test_a_verified_user_logs_in_and_out(client, alice):
    response = client.post("/accounts/login/", {"login": alice.email, "password": PASSWORD})
    assert response.status_code == 302
    page = client.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Premium" in html and alice.email in html
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302


def test_a_wrong_password_shows_the_form_again(client, alice):
    response = client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
    assert response.status_code == 200
    assert "not correct" in response.content.decode()


def test_logins_are_rate_limited(client, alice):
    for _ in range(5):
        client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
    response = client.post("/accounts/login/", {"login": alice.email, "password": PASSWORD})
    assert response.status_code == 429 and response["Retry-After"] == "900"  # LOGIN_FAILURE_WINDOW_MINUTES
    assert "Too many failed login attempts" in response.content.decode()
    assert client.get("/").status_code == 302  # even the right password is refused for now


def test_retry_after_follows_the_configured_limit(client, alice, settings):
    settings.LOGIN_FAILURE_LIMIT, settings.LOGIN_FAILURE_WINDOW = 3, timedelta(minutes=2)
    for _ in range(3):
        client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
    response = client.post("/accounts/login/", {"login": alice.email, "password": "wrong"})
    assert response.status_code == 429 and response["Retry-After"] == "120"


def test_password_reset_by_email(client, alice):
    client.post("/accounts/password/reset/", {"email": alice.email})
    assert len(mail.outbox) == 1
    reset_link = link_in(mail.outbox[0])
    form = client.get(reset_link, follow=True)
    assert form.status_code == 200
    action = form.redirect_chain[-1][0] if form.redirect_chain else reset_link
    done = client.post(action, {"password1": "a brand new password 9", "password2": "a brand new password 9"})
    assert done.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("a brand new password 9")


def test_the_dashboard_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
