"""One bad phone must not lock out an office behind one NAT address: every password sign-in (the
JSON API's /auth/login, the portal's, the webmail's, DAV's) allows LOGIN_FAILURE_LIMIT failures per
address and a separate, far higher LOGIN_FAILURE_IP_LIMIT per client IP."""
import base64

import pytest
from django.test import Client

from testkit.factories import PASSWORD, make_mailbox

pytestmark = pytest.mark.django_db
OFFICE = "203.0.113.7"
ELSEWHERE = "198.51.100.9"
MAILBOX_PASSWORD = "mailbox-password-1"


def api_login(login: str, password: str, ip: str) -> str:
    response = Client().post("/auth/login", {"email": login, "password": password},
                             content_type="application/json", REMOTE_ADDR=ip)
    return {200: "ok", 401: "refused", 429: "throttled"}[response.status_code]


def portal_login(login: str, password: str, ip: str) -> str:
    response = Client().post("/accounts/login/", {"login": login, "password": password}, REMOTE_ADDR=ip)
    return {302: "ok", 200: "refused", 429: "throttled"}[response.status_code]


def webmail_login(login: str, password: str, ip: str) -> str:
    response = Client().post("/webmail/", {"address": login, "password": password}, REMOTE_ADDR=ip)
    return {302: "ok", 401: "refused", 429: "throttled"}[response.status_code]


def dav_login(login: str, password: str, ip: str) -> str:
    credentials = base64.b64encode(f"{login}:{password}".encode()).decode()
    response = Client().generic("PROPFIND", "/dav/", "", HTTP_AUTHORIZATION=f"Basic {credentials}",
                                HTTP_DEPTH="0", REMOTE_ADDR=ip)
    return {207: "ok", 401: "refused", 429: "throttled"}[response.status_code]


@pytest.fixture(params=["api", "portal", "webmail", "dav"])
def realm(request, alice, bob):
    """(sign in, one person's login, a colleague's login, their password) for each sign-in."""
    if request.param in ("api", "portal"):
        sign_in = api_login if request.param == "api" else portal_login
        return sign_in, alice.email, bob.email, PASSWORD
    make_mailbox(alice.account, "ann@example.test", password=MAILBOX_PASSWORD)
    make_mailbox(alice.account, "bea@example.test", password=MAILBOX_PASSWORD)
    sign_in = webmail_login if request.param == "webmail" else dav_login
    return sign_in, "ann@example.test", "bea@example.test", MAILBOX_PASSWORD


def test_five_wrong_passwords_lock_that_address_but_not_the_office(realm, settings):
    sign_in, login, colleague, password = realm

    failures = [sign_in(login, "an old password", OFFICE) for _ in range(settings.LOGIN_FAILURE_LIMIT)]

    assert failures == ["refused"] * 5
    assert sign_in(login, password, OFFICE) == "throttled"  # the address is locked, the right password too
    assert sign_in(colleague, password, OFFICE) == "ok"  # the colleague behind the same NAT is not


def test_the_per_ip_limit_is_separate_and_higher(realm, settings):
    sign_in, login, colleague, password = realm
    assert settings.LOGIN_FAILURE_IP_LIMIT == 100 > settings.LOGIN_FAILURE_LIMIT == 5
    settings.LOGIN_FAILURE_IP_LIMIT = 8
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "8/900s/ip,5/900s/key"}

    guesses = [sign_in(f"guess{n}@example.test", "guess", OFFICE) for n in range(8)]

    assert guesses == ["refused"] * 8
    assert sign_in(colleague, password, OFFICE) == "throttled"  # many addresses guessed from one IP
    assert sign_in(colleague, password, ELSEWHERE) == "ok"
