import pytest

from testkit.clients import new_key
from mailcore.partners.services import hosting_partner_enable

pytestmark = pytest.mark.django_db


def test_any_valid_key_reads_the_accounts_plan(api, alice):
    response = api.get("/subscriptions/me", HTTP_X_API_KEY=new_key(alice, scopes=["contacts:read"]))
    assert response.status_code == 200
    assert response.json() == {
        "plan": "premium",
        "plan_name": "Premium",
        "features": {"webhooks": True, "contacts": True, "calendar": True, "read_receipts": True,
                     "ai_agent_tools": True, "campaigns": True},
        "quotas": {"sends_per_day": 10000, "sends_per_hour": 1500, "storage_mb": 20480,
                   "ai_requests_per_day": None, "attachment_max_mb": 35},
        "hosting_partner_status": None,
        "subscription": None,
    }


def test_a_session_reads_the_free_plan_and_partner_status(charlie, charlie_api):
    hosting_partner_enable(account=charlie.account, status="trial")
    body = charlie_api.get("/subscriptions/me").json()
    assert body["plan"] == "free"
    assert body["features"]["webhooks"] is False and body["features"]["contacts"] is False
    assert body["quotas"]["sends_per_day"] == 100
    assert body["hosting_partner_status"] == "trial"


def test_without_credentials_it_is_401(api):
    assert api.get("/subscriptions/me").status_code == 401
