"""X-API-Key on every API-key endpoint: validity, expiry, revocation, scopes, address lists."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from testkit.clients import new_key

pytestmark = [pytest.mark.django_db, pytest.mark.urls("api.tests.probe_urls")]


def call(api, raw, ip="203.0.113.10", method="get", path="/probe/scoped", **headers):
    return getattr(api, method)(path, {}, format="json", HTTP_X_API_KEY=raw, REMOTE_ADDR=ip, **headers)


def test_a_valid_key_with_the_scope_is_let_in(api, alice):
    response = call(api, new_key(alice, scopes=["mailboxes:read"]))
    assert response.status_code == 200
    assert response.json() == {"ok": True}


@pytest.mark.parametrize("raw", ["", "nonsense", "mk_aaaaaaaaaaaa_" + "a" * 43, "st_aaaaaaaaaaaa_" + "b" * 43])
def test_a_missing_or_invalid_key_is_401(api, alice, raw):
    new_key(alice)
    response = call(api, raw)
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid API key."
    assert "X-API-Key" in response["WWW-Authenticate"]


def test_no_credentials_at_all_is_401(api):
    response = api.get("/probe/scoped")
    assert response.status_code == 401
    assert response.json() == {"detail": "Authentication credentials were not provided."}


def test_a_key_with_one_changed_character_is_401(api, alice):
    raw = new_key(alice, scopes=["mailboxes:read"])
    tampered = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    assert call(api, tampered).status_code == 401


def test_an_expired_key_is_401(api, alice):
    raw = new_key(alice, scopes=["mailboxes:read"], expires_at=timezone.now() + timedelta(hours=1))
    assert call(api, raw).status_code == 200
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=1)):
        response = call(api, raw)
    assert response.status_code == 401
    assert response.json() == {"detail": "This API key has expired."}


def test_a_missing_scope_is_403_naming_it(api, alice):
    raw = new_key(alice, scopes=["mailboxes:read"])
    response = call(api, raw, method="post")
    assert response.status_code == 403
    assert response.json() == {"detail": "This API key lacks the 'mailboxes:write' scope."}


def test_head_needs_the_scope_get_needs(api, alice):
    assert api.head("/probe/scoped", HTTP_X_API_KEY=new_key(alice, scopes=["send"])).status_code == 403
    assert api.head("/probe/scoped", HTTP_X_API_KEY=new_key(alice, scopes=["mailboxes:read"])).status_code == 200


def test_a_session_user_acts_with_all_scopes(alice_api):
    assert alice_api.post("/probe/scoped", {"a": 1}, format="json").status_code == 200


# The allow/block matrix: (allowed_ips, blocked_ips, client address, expected status).
MATRIX = [
    (None, None, "198.51.100.1", 200),
    (["198.51.100.1"], None, "198.51.100.1", 200),
    (["198.51.100.1"], None, "198.51.100.2", 403),
    (["198.51.100.0/24"], None, "198.51.100.77", 200),
    (["198.51.100.0/24"], None, "198.51.101.1", 403),
    (None, ["198.51.100.0/24"], "198.51.100.77", 403),
    (None, ["198.51.100.0/24"], "192.0.2.1", 200),
    (["2001:db8::/32"], None, "2001:db8:1::5", 200),
    (["2001:db8::/32"], None, "2001:db9::5", 403),
    (["2001:db8::1"], None, "2001:db8::1", 200),
    (None, ["2001:db8::/48"], "2001:db8::9", 403),
    (None, ["2001:db8::/48"], "2001:db8:1::9", 200),
    (["198.51.100.0/24"], ["198.51.100.7"], "198.51.100.7", 403),  # in both: the blocklist wins
    (["198.51.100.0/24"], ["198.51.100.7"], "198.51.100.8", 200),
    (["198.51.100.0/24"], None, "2001:db8::1", 403),  # an IPv6 client against an IPv4 allowlist
    (["198.51.100.0/24", "2001:db8::/32"], None, "2001:db8::1", 200),
    (["198.51.100.5"], None, "::ffff:198.51.100.5", 200),  # IPv4-mapped IPv6
]


@pytest.mark.parametrize("allowed, blocked, ip, expected", MATRIX)
def test_the_allow_and_block_lists(api, alice, allowed, blocked, ip, expected):
    raw = new_key(alice, scopes=["mailboxes:read"], allowed_ips=allowed, blocked_ips=blocked)
    response = call(api, raw, ip=ip)
    assert response.status_code == expected
    if expected == 403:
        assert ip in response.json()["detail"]


def test_forwarded_for_is_ignored_without_trusted_proxies(api, alice):
    raw = new_key(alice, scopes=["mailboxes:read"], allowed_ips=["198.51.100.1"])
    response = call(api, raw, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert response.status_code == 403


def test_forwarded_for_is_read_behind_a_trusted_proxy(api, alice, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    raw = new_key(alice, scopes=["mailboxes:read"], allowed_ips=["198.51.100.1"])
    assert call(api, raw, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 200
    # a client cannot prepend an address of its choosing: the proxy appends the real one
    spoofed = call(api, raw, ip="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.1, 192.0.2.66")
    assert spoofed.status_code == 403


def test_the_plan_gate_names_the_plan_that_has_the_feature(api, charlie):
    response = call(api, new_key(charlie), path="/probe/plan")
    assert response.status_code == 403
    assert response.json() == {"detail": "Webhooks needs the Premium plan; your plan does not include it."}


def test_the_plan_gate_lets_a_premium_account_in(api, alice):
    assert call(api, new_key(alice), path="/probe/plan").status_code == 200
