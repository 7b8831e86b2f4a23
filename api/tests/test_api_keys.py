"""/api-keys: create, list, update, revoke, usage; session auth only."""
from datetime import timedelta

import pytest
from django.utils import timezone

from testkit.clients import new_key
from mailcore.apikeys.models import ApiKey
from mailcore.credentials import digest_of

pytestmark = pytest.mark.django_db

RECORD_FIELDS = {"id", "name", "key_prefix", "scopes", "allowed_ips", "blocked_ips", "expires_at", "created_at", "is_active"}


def test_creating_a_key_returns_the_raw_key_once_with_default_scope(alice_api, alice):
    response = alice_api.post("/api-keys", {"name": "CI"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) == RECORD_FIELDS | {"key"}
    assert body["scopes"] == ["send"]
    assert body["key"].startswith(body["key_prefix"] + "_")
    assert body["is_active"] is True and body["allowed_ips"] is None and body["expires_at"] is None
    stored = ApiKey.objects.get(pk=body["id"])
    assert stored.key_digest == digest_of(body["key"])
    assert body["key"] not in str(stored.__dict__)  # the raw key is not stored
    listed = alice_api.get("/api-keys").json()
    assert [set(item) for item in listed] == [RECORD_FIELDS]
    assert listed[0]["key_prefix"] == body["key_prefix"]


def test_it_accepts_every_user_scope_and_expiry_and_address_lists(alice_api):
    expires = (timezone.now() + timedelta(days=30)).isoformat()
    response = alice_api.post(
        "/api-keys",
        {
            "name": "full",
            "scopes": ["send", "mailboxes:read", "mailboxes:write", "domains:read", "domains:write", "webhooks",
                       "contacts:read", "contacts:write"],
            "expires_at": expires,
            "allowed_ips": ["203.0.113.0/24", "2001:db8::1"],
            "blocked_ips": ["203.0.113.7"],
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["allowed_ips"] == ["203.0.113.0/24", "2001:db8::1/128"]
    assert body["blocked_ips"] == ["203.0.113.7/32"]
    assert len(body["scopes"]) == 8


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"name": "x", "scopes": ["send", "admin"]}, "scopes"),
        ({"name": "x", "scopes": ["partner:stats:read"]}, "scopes"),  # alice is no hosting partner
        ({"name": "x", "allowed_ips": ["10.0.0.300"]}, "allowed_ips"),
        ({"name": "x", "blocked_ips": ["not-an-ip"]}, "blocked_ips"),
        ({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "x", "expires_at": "tomorrow"}, "expires_at"),
        ({"scopes": ["send"]}, "name"),
        ({"name": "x", "scopes": "send"}, "scopes"),
    ],
)
def test_bad_input_is_422_with_field_errors_and_creates_nothing(alice_api, payload, field):
    response = alice_api.post("/api-keys", payload, format="json")
    assert response.status_code == 422
    body = response.json()
    assert body["detail"].startswith("Validation failed: ")
    assert field in body["errors"]
    assert ApiKey.objects.count() == 0


def test_partner_accounts_may_hold_partner_scopes(alice, alice_api):
    from mailcore.partners.services import hosting_partner_enable

    hosting_partner_enable(account=alice.account)
    response = alice_api.post("/api-keys", {"name": "p", "scopes": ["partner:domains:write"]}, format="json")
    assert response.status_code == 201
    assert response.json()["scopes"] == ["partner:domains:write"]


def test_patch_replaces_and_clears_the_address_lists(alice_api, alice):
    key_id = alice_api.post("/api-keys", {"name": "k", "allowed_ips": ["10.0.0.1"]}, format="json").json()["id"]
    response = alice_api.patch(f"/api-keys/{key_id}", {"allowed_ips": ["192.0.2.0/24"], "blocked_ips": ["192.0.2.5"]}, format="json")
    assert response.status_code == 200
    assert response.json()["allowed_ips"] == ["192.0.2.0/24"]
    assert response.json()["blocked_ips"] == ["192.0.2.5/32"]
    cleared = alice_api.patch(f"/api-keys/{key_id}", {"allowed_ips": []}, format="json").json()
    assert cleared["allowed_ips"] is None
    assert cleared["blocked_ips"] == ["192.0.2.5/32"]


@pytest.mark.parametrize("field, value", [("name", "new"), ("scopes", ["send"]), ("expires_at", None)])
def test_name_scopes_and_expiry_cannot_change(alice_api, field, value):
    key_id = alice_api.post("/api-keys", {"name": "k"}, format="json").json()["id"]
    response = alice_api.patch(f"/api-keys/{key_id}", {field: value}, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {field: ["cannot change after creation"]}
    assert ApiKey.objects.get(pk=key_id).name == "k"


def test_patch_with_a_bad_address_changes_nothing(alice_api):
    key_id = alice_api.post("/api-keys", {"name": "k", "allowed_ips": ["10.0.0.1"]}, format="json").json()["id"]
    response = alice_api.patch(f"/api-keys/{key_id}", {"allowed_ips": ["10.0.0.2", "bogus"], "is_active": False}, format="json")
    assert response.status_code == 422
    key = ApiKey.objects.get(pk=key_id)
    assert key.allowed_ips == ["10.0.0.1/32"] and key.is_active


def test_patch_is_active_false_revokes_and_a_revoked_key_cannot_come_back(alice_api, api, alice):
    created = alice_api.post("/api-keys", {"name": "k"}, format="json").json()
    assert api.get("/subscriptions/me", HTTP_X_API_KEY=created["key"]).status_code == 200
    assert alice_api.patch(f"/api-keys/{created['id']}", {"is_active": False}, format="json").json()["is_active"] is False
    assert api.get("/subscriptions/me", HTTP_X_API_KEY=created["key"]).status_code == 401
    again = alice_api.patch(f"/api-keys/{created['id']}", {"is_active": True}, format="json")
    assert again.status_code == 422
    assert ApiKey.objects.get(pk=created["id"]).is_active is False


def test_delete_is_a_soft_revoke(alice_api, api):
    created = alice_api.post("/api-keys", {"name": "k"}, format="json").json()
    assert alice_api.delete(f"/api-keys/{created['id']}").status_code == 204
    assert ApiKey.objects.get(pk=created["id"]).is_active is False
    response = api.get("/subscriptions/me", HTTP_X_API_KEY=created["key"])
    assert response.status_code == 401
    assert response.json() == {"detail": "This API key has been revoked."}
    assert alice_api.get("/api-keys").json()[0]["is_active"] is False


def test_a_teammate_sees_the_accounts_keys(alice_api, bob):
    from testkit.clients import login_client

    key_id = alice_api.post("/api-keys", {"name": "shared"}, format="json").json()["id"]
    assert login_client(bob).get(f"/api-keys/{key_id}").status_code == 200


def test_another_accounts_key_is_404_everywhere(alice_api, charlie_api):
    key_id = alice_api.post("/api-keys", {"name": "mine"}, format="json").json()["id"]
    for method, path, body in [
        ("get", f"/api-keys/{key_id}", None),
        ("patch", f"/api-keys/{key_id}", {"is_active": False}),
        ("delete", f"/api-keys/{key_id}", None),
        ("get", f"/api-keys/{key_id}/usage", None),
    ]:
        response = getattr(charlie_api, method)(path, body, format="json")
        assert response.status_code == 404, (method, path)
        assert response.json() == {"detail": "Not found."}
    assert charlie_api.get("/api-keys").json() == []
    assert ApiKey.objects.get(pk=key_id).is_active is True


def test_an_api_key_cannot_manage_api_keys(api, alice):
    raw = new_key(alice, scopes=["send", "webhooks"])
    for method in ("get", "post"):
        response = getattr(api, method)("/api-keys", {"name": "x"}, format="json", HTTP_X_API_KEY=raw)
        assert response.status_code == 401
        assert isinstance(response.json()["detail"], str)
    assert ApiKey.objects.count() == 1


def test_usage_counts_requests_per_day(alice_api, api):
    created = alice_api.post("/api-keys", {"name": "k"}, format="json").json()
    for _ in range(3):
        api.get("/subscriptions/me", HTTP_X_API_KEY=created["key"])
    usage = alice_api.get(f"/api-keys/{created['id']}/usage").json()
    assert usage["today"] == 3 and usage["last_7_days"] == 3 and usage["last_30_days"] == 3
    assert len(usage["daily"]) == 30
    assert usage["daily"][-1] == {"date": timezone.now().date().isoformat(), "count": 3}
    assert sum(day["count"] for day in usage["daily"]) == 3


def test_usage_is_buffered_and_written_in_batches(alice_api, api, settings, django_assert_max_num_queries):
    settings.API_KEY_USAGE_FLUSH_SECONDS = 3600
    created = alice_api.post("/api-keys", {"name": "k"}, format="json").json()
    with django_assert_max_num_queries(2 * 20):  # 20 requests: one key lookup each, no usage writes
        for _ in range(20):
            api.get("/subscriptions/me", HTTP_X_API_KEY=created["key"])
    assert alice_api.get(f"/api-keys/{created['id']}/usage").json()["today"] == 20
