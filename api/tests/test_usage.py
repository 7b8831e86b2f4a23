import pytest

from mailcore.store.factory import store_for
from testkit.factories import make_mailbox, make_message
from mailcore.usage.services import usage_count_ai_request, usage_count_send

pytestmark = pytest.mark.django_db


def test_usage_reports_storage_sends_and_ai_requests(alice_api, alice):
    mailbox = make_mailbox(alice.account, "inbox@example.test")
    raw = make_message(body="x" * 300_000)
    store_for(mailbox).append("INBOX", raw)
    usage_count_send(mailbox=mailbox, count=3)
    usage_count_ai_request(mailbox=mailbox)
    response = alice_api.get("/mail/mailbox-usage", {"email": "inbox@example.test"})
    assert response.status_code == 200
    body = response.json()
    used_mb = round(len(raw) / 1048576, 3)
    assert body == {
        "email": "inbox@example.test",
        "plan": "premium",
        "storage": {"used_mb": used_mb, "limit_mb": 20480, "percentage": round(100 * used_mb / 20480, 2)},
        "emails_today": {"sent": 3, "limit": 10000, "percentage": 0.03},
        "ai_today": {"used": 1, "limit": 0, "unlimited": True, "percentage": 0.0},
    }


def test_a_free_mailbox_has_the_free_limits(charlie_api, charlie):
    make_mailbox(charlie.account, "me@charlie.test")
    body = charlie_api.get("/mail/mailbox-usage", {"email": "me@charlie.test"}).json()
    assert body["plan"] == "free"
    assert body["storage"]["limit_mb"] == 1024
    assert body["emails_today"] == {"sent": 0, "limit": 100, "percentage": 0.0}
    assert body["ai_today"] == {"used": 0, "limit": 0, "unlimited": False, "percentage": 0.0}


def test_the_email_parameter_is_required(alice_api):
    assert alice_api.get("/mail/mailbox-usage").status_code == 422
