"""The sign-in throttle holds under a flood: failed sign-ins for made-up addresses from many IPs,
each under its per-IP limit, never cull a live lock out of the product's own cache."""
import importlib
import os
import uuid

import pytest

from testkit.factories import PASSWORD

pytestmark = pytest.mark.django_db


def login(api, email, password, ip):
    return api.post("/auth/login", {"email": email, "password": password}, format="json", REMOTE_ADDR=ip)


def test_a_locked_address_stays_locked_after_a_flood_of_made_up_addresses(api, alice, settings, tmp_path):
    product = importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    cache = dict(product.CACHES["default"])
    if cache["BACKEND"].endswith("FileBasedCache"):
        cache["LOCATION"] = str(tmp_path / "cache")  # the embedded default's cache, in a folder of this test's
    cache["KEY_PREFIX"] = uuid.uuid4().hex  # Redis (REDIS_URL) is shared by every run: keys of this test's own
    settings.CACHES = {"default": cache}
    for _ in range(settings.LOGIN_FAILURE_LIMIT):
        assert login(api, alice.email, "wrong", "203.0.113.1").status_code == 401
    for n in range(400):  # eight addresses, each well under the per-IP limit
        login(api, f"made-up-{n}@flood.test", "wrong", f"198.51.100.{n % 8 + 10}")
    assert login(api, alice.email, PASSWORD, "203.0.113.1").status_code == 429
    assert login(api, alice.email, PASSWORD, "192.0.2.77").status_code == 429  # the address, from anywhere


def test_an_ipv6_client_is_counted_by_its_64_not_per_address(api, alice, settings):
    settings.LOGIN_FAILURE_IP_LIMIT = 3
    for n in range(3):  # one host walking through the addresses of its /64
        assert login(api, f"guess{n}@example.test", "wrong", f"2001:db8:1:2::{n + 1}").status_code == 401
    assert login(api, alice.email, PASSWORD, "2001:db8:1:2::ff").status_code == 429
    assert login(api, alice.email, PASSWORD, "2001:db8:1:3::1").status_code == 200  # the next network
