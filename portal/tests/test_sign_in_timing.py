"""Whether an address is hosted must not show in how long a sign-in takes: a wrong password for an
address that does not exist costs the same password-hash work as one for an address that does.
Measured as CPU time of the request's own thread (argon2 runs there), so other processes on the
machine do not move it; the median of several tries, against a generous bound (before the fix an
unknown address cost about a twentieth)."""
import base64
import statistics
import time

import pytest
from django.test import Client

from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db
TRIES = 7


def webmail_attempt(address: str) -> int:
    return Client().post("/webmail/", {"address": address, "password": "a wrong password"}).status_code


def dav_attempt(address: str) -> int:
    credentials = base64.b64encode(f"{address}:a wrong password".encode()).decode()
    return Client().generic("PROPFIND", "/dav/", "", HTTP_AUTHORIZATION=f"Basic {credentials}",
                            HTTP_DEPTH="0").status_code


def api_attempt(address: str) -> int:
    return Client().post("/auth/login", {"email": address, "password": "a wrong password"},
                         content_type="application/json").status_code


def cpu_cost(attempt, address: str, refused: int) -> float:
    """The median CPU time of the request's thread over TRIES refused sign-ins."""
    costs = []
    for _ in range(TRIES):
        start = time.thread_time()
        assert attempt(address) == refused
        costs.append(time.thread_time() - start)
    return statistics.median(costs)


@pytest.fixture(autouse=True)
def _no_throttle(settings):
    settings.LOGIN_FAILURE_LIMIT = settings.LOGIN_FAILURE_IP_LIMIT = 1000


@pytest.mark.parametrize("attempt, refused", [(webmail_attempt, 401), (dav_attempt, 401), (api_attempt, 401)],
                         ids=["webmail", "dav", "api"])
def test_an_unknown_address_costs_as_much_as_a_known_one_with_a_wrong_password(alice, attempt, refused, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]  # production's, not the tests' MD5
    alice.set_password("alice's real password")
    alice.save()
    make_mailbox(alice.account, "ann@example.test")
    known = "ann@example.test" if attempt is not api_attempt else alice.email
    unknown = "nobody@example.test"
    attempt(unknown), attempt(known)  # warm: the stand-in hash is made once per process

    known_cost = cpu_cost(attempt, known, refused)
    unknown_cost = cpu_cost(attempt, unknown, refused)

    assert known_cost > 0.005  # a real password hash was checked
    assert unknown_cost > 0.5 * known_cost, (unknown_cost, known_cost)
    assert unknown_cost < 2 * known_cost, (unknown_cost, known_cost)
