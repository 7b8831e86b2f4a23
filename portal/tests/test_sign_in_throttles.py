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

    guesses = [sign_in(f"guess{n}@example.test", "guess", OFFICE) for n in range(8)]

    assert guesses == ["refused"] * 8
    assert sign_in(colleague, password, OFFICE) == "throttled"  # many addresses guessed from one IP
    assert sign_in(colleague, password, ELSEWHERE) == "ok"


def test_a_mailboxs_sign_in_paths_share_one_count(alice, settings):
    """Webmail, DAV and the password change together allow LOGIN_FAILURE_LIMIT guesses, not 5 each."""
    make_mailbox(alice.account, "ann@example.test", password=MAILBOX_PASSWORD)
    owner = Client(REMOTE_ADDR=OFFICE)
    assert owner.post("/webmail/", {"address": "ann@example.test", "password": MAILBOX_PASSWORD}).status_code == 302

    assert [webmail_login("ann@example.test", "guess", ELSEWHERE) for _ in range(2)] == ["refused"] * 2
    assert [dav_login("ann@example.test", "guess", ELSEWHERE) for _ in range(2)] == ["refused"] * 2
    change = owner.post("/webmail/settings/password/", {"current_password": "guess", "new_password": "x" * 12,
                                                        "new_password_again": "x" * 12})
    assert change.status_code == 400

    assert webmail_login("ann@example.test", MAILBOX_PASSWORD, OFFICE) == "throttled"
    assert dav_login("ann@example.test", MAILBOX_PASSWORD, OFFICE) == "throttled"
    again = owner.post("/webmail/settings/password/", {"current_password": MAILBOX_PASSWORD,
                                                       "new_password": "x" * 12, "new_password_again": "x" * 12})
    assert again.status_code == 429


def test_an_accounts_sign_in_paths_share_one_count(alice, settings):
    """POST /auth/login and the portal's sign-in together allow LOGIN_FAILURE_LIMIT guesses."""
    assert [api_login(alice.email, "guess", ELSEWHERE) for _ in range(3)] == ["refused"] * 3
    assert [portal_login(alice.email, "guess", ELSEWHERE) for _ in range(2)] == ["refused"] * 2

    assert api_login(alice.email, PASSWORD, OFFICE) == "throttled"
    assert portal_login(alice.email, PASSWORD, OFFICE) == "throttled"


def test_right_passwords_under_the_limit_are_never_refused_and_do_not_use_it_up(alice, settings):
    make_mailbox(alice.account, "ann@example.test", password=MAILBOX_PASSWORD)
    assert webmail_login("ann@example.test", "guess", OFFICE) == "refused"
    for _ in range(3 * settings.LOGIN_FAILURE_LIMIT):
        assert dav_login("ann@example.test", MAILBOX_PASSWORD, OFFICE) == "ok"
        assert api_login(alice.email, PASSWORD, OFFICE) == "ok"
    assert portal_login(alice.email, PASSWORD, OFFICE) == "ok"
    assert [webmail_login("ann@example.test", "guess", OFFICE)
            for _ in range(settings.LOGIN_FAILURE_LIMIT - 1)] == ["refused"] * (settings.LOGIN_FAILURE_LIMIT - 1)
    assert webmail_login("ann@example.test", MAILBOX_PASSWORD, OFFICE) == "throttled"


@pytest.mark.django_db(transaction=True)  # the threads read the mailbox the test wrote
def test_a_burst_of_parallel_guesses_gets_no_more_than_the_limit(plans, alice, settings):
    """Each attempt is counted before its password is checked: twenty guesses sent at once (as from
    many workers) get LOGIN_FAILURE_LIMIT answers between them, the rest are throttled."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    make_mailbox(alice.account, "ann@example.test", password=MAILBOX_PASSWORD)
    start = Barrier(20)

    def guess(number: int) -> str:
        try:
            start.wait()
            return dav_login("ann@example.test", f"guess {number}", f"198.51.100.{number}")
        finally:
            connection.close()

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(guess, range(20)))

    assert answers.count("refused") == settings.LOGIN_FAILURE_LIMIT, answers
    assert answers.count("throttled") == 20 - settings.LOGIN_FAILURE_LIMIT
