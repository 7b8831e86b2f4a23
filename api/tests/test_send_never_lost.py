"""A send the API accepts is delivered or ends `failed` with email.failed, never silently dropped;
what becomes a header is refused when the request is made; events say what the send result said.
The relay is a real SMTP server on loopback; events reach a real HTTPS receiver."""
import base64
import email
from datetime import timedelta
from email import policy

import pytest
import time_machine
from django.utils import timezone

from testkit.clients import login_client, new_key
from mailcore.events.models import Event
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import CLAIM_TIMEOUT, MAX_ATTEMPTS, outbound_dispatch_due
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox
from mailcore.webhooks.delivery import webhooks_deliver_due

pytestmark = pytest.mark.django_db

SENDER = "news@example.test"


@pytest.fixture
def mailbox(alice):
    return make_mailbox(alice.account, SENDER)


@pytest.fixture
def key(alice, mailbox):
    return new_key(alice, scopes=["send", "mailboxes:read"])


@pytest.fixture
def subscribed(receiver, alice):
    """The standing HTTPS receiver, subscribed by alice to email.sent and email.failed."""
    created = login_client(alice).post("/webhooks", {"url": receiver.url(), "events": [
        "email.sent", "email.failed"]}, format="json").json()
    receiver.secret = created["secret"]
    return receiver


def send(api, key, **fields):
    body = {"from_email": SENDER, "to": ["bob@remote.test"], "subject": "Hello", "body_text": "Hi Bob", **fields}
    return api.post("/mail/send", {k: v for k, v in body.items() if v is not None}, format="json",
                    HTTP_X_API_KEY=key)


def delivered_events(receiver) -> list[dict]:
    webhooks_deliver_due()
    assert all(hit.signature_valid for hit in receiver.hits)
    return [hit.envelope for hit in receiver.hits]


ATTACHMENT = base64.b64encode(b"%PDF-1.4 tiny").decode()


@pytest.mark.parametrize("fields, field, words", [
    ({"subject": "Hello\r\nBcc: someone@example.org"}, "subject", "line breaks"),
    ({"subject": "Hello\nthere"}, "subject", "line breaks"),
    ({"subject": "Bell\x07"}, "subject", "control characters"),
    ({"reply_to": "a@b.test\r\nBcc: x@y.test"}, "reply_to", "not a valid email address"),
    ({"attachments": [{"filename": "a.pdf\r\nX-Evil: 1", "content_base64": ATTACHMENT,
                       "content_type": "application/pdf"}]}, "attachments", "filename must not contain line breaks"),
    ({"attachments": [{"filename": "a.pdf", "content_base64": ATTACHMENT,
                       "content_type": "application/pdf\r\nX-Evil: 1"}]}, "attachments", "is not a MIME type"),
    ({"attachments": [{"filename": "a.pdf", "content_base64": ATTACHMENT,
                       "content_type": "application/pdf; x=\"y\""}]}, "attachments", "is not a MIME type"),
    ({"to": ["sömeone@example.org"]}, "to", "non-ASCII local part"),
])
def test_a_value_that_would_break_a_header_is_422_naming_the_field_and_nothing_is_queued(
        api, key, relay, fields, field, words):
    response = send(api, key, **fields)
    assert response.status_code == 422, response.json()
    assert words in str(response.json()["errors"][field])
    assert field in response.json()["detail"]
    assert OutboundMessage.objects.count() == 0 and Event.objects.count() == 0


def test_a_template_whose_variables_put_a_line_break_in_the_subject_is_422(api, key, alice, relay):
    template = login_client(alice).post("/mail/templates", {"name": "Hi", "subject": "Hi {{name}}",
                                                            "body_html": "<p>x</p>"}, format="json").json()
    response = send(api, key, template_id=template["id"], subject=None, body_text=None,
                    variables={"name": "Bob\r\nBcc: eve@evil.test"})
    assert response.status_code == 422
    assert "after the template's variables were filled in" in response.json()["errors"]["subject"][0]
    assert OutboundMessage.objects.count() == 0


def test_a_template_subject_with_a_line_break_is_refused_when_saved(alice):
    client = login_client(alice)
    response = client.post("/mail/templates", {"name": "Bad", "subject": "a\r\nb", "body_html": "<p>x</p>"},
                           format="json")
    assert response.status_code == 422 and "subject" in response.json()["errors"]
    good = client.post("/mail/templates", {"name": "Good", "subject": "a", "body_html": "<p>x</p>"},
                       format="json").json()
    assert client.patch(f"/mail/templates/{good['id']}", {"subject": "a\nb"}, format="json").status_code == 422
    assert client.get(f"/mail/templates/{good['id']}").json()["subject"] == "a"


def test_the_agent_tool_refuses_the_same_header_values_as_a_tool_error(api, alice, mailbox, relay):
    key = new_key(alice, scopes=["send"])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_email", "arguments": {
        "from_email": SENDER, "to": ["bob@remote.test"], "subject": "Hi\r\nBcc: eve@evil.test", "body_text": "x",
        "sandbox": False}}}
    result = api.post("/mcp", call, format="json", HTTP_X_API_KEY=key,
                      HTTP_MCP_PROTOCOL_VERSION="2025-11-25").json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["status"] == 422 and "subject" in result["structuredContent"]["errors"]
    assert OutboundMessage.objects.count() == 0


def _accepted_long_ago(mailbox, **payload) -> OutboundMessage:
    """A row as an older release accepted it, before header values were checked."""
    body = {"to": ["bob@remote.test"], "cc": [], "bcc": [], "reply_to": "", "subject": "Hello", "body_html": "",
            "body_text": "Hi", "attachments": [], "pending": ["bob@remote.test"], **payload}
    return OutboundMessage.objects.create(account=mailbox.account, mailbox=mailbox, status="queued", payload=body,
                                          due_at=timezone.now())


def test_a_queued_message_that_cannot_be_built_ends_failed_listed_and_announced(api, key, mailbox, relay, subscribed):
    message = _accepted_long_ago(mailbox, subject="Hello\r\nBcc: someone@example.org")
    assert outbound_dispatch_due() == 1
    message.refresh_from_db()
    assert message.status == "failed" and relay.messages == []
    [listed] = api.get("/mail/scheduled", HTTP_X_API_KEY=key).json()
    assert (listed["message_id"], listed["status"]) == (str(message.message_id), "failed")
    assert listed["error"].startswith("554 5.6.0 Message could not be built")
    assert api.get("/mail/scheduled", {"status": "scheduled"}, HTTP_X_API_KEY=key).json() == []
    [event] = delivered_events(subscribed)
    assert event["event"] == "email.failed"
    assert event["data"]["message_id"] == str(message.message_id)
    assert event["data"]["recipients"][0]["recipient"] == "bob@remote.test"
    assert outbound_dispatch_due() == 0  # final: never picked up again


def test_a_message_whose_worker_dies_every_time_fails_after_the_last_attempt(api, key, mailbox, relay, subscribed):
    message = _accepted_long_ago(mailbox)
    OutboundMessage.objects.filter(pk=message.pk).update(status="sending", attempts=MAX_ATTEMPTS,
                                                         claimed_until=timezone.now() - timedelta(seconds=1))
    assert outbound_dispatch_due() == 1
    message.refresh_from_db()
    assert (message.status, message.attempts) == ("failed", MAX_ATTEMPTS + 1)
    assert relay.messages == []
    assert [event["event"] for event in delivered_events(subscribed)] == ["email.failed"]


def test_a_claim_abandoned_by_a_killed_worker_is_taken_again_and_sent_once(api, key, mailbox, relay):
    result = send(api, key).json()
    OutboundMessage.objects.update(status="sending", attempts=1, claimed_until=timezone.now() + CLAIM_TIMEOUT)
    assert outbound_dispatch_due() == 0  # the claim is still held
    with time_machine.travel(timezone.now() + CLAIM_TIMEOUT + timedelta(seconds=1)):
        assert outbound_dispatch_due() == 1
    assert len(relay.messages) == 1
    assert [e.data["message_id"] for e in Event.objects.filter(name="email.sent")] == [result["message_id"]]


def test_email_sent_carries_the_scheduled_id_the_send_result_gave(api, key, relay, subscribed):
    held = send(api, key, unsend_window=5).json()
    later = timezone.now() + timedelta(hours=1)
    scheduled = send(api, key, scheduled_at=later.isoformat()).json()
    direct = send(api, key).json()
    assert held["scheduled_id"] and scheduled["scheduled_id"] and direct["scheduled_id"] is None
    with time_machine.travel(later + timedelta(seconds=1)):
        assert outbound_dispatch_due() == 3
        envelopes = delivered_events(subscribed)
    sent = {event["data"]["message_id"]: event["data"]["scheduled_id"] for event in envelopes}
    assert sent == {held["message_id"]: held["scheduled_id"], scheduled["message_id"]: scheduled["scheduled_id"],
                    direct["message_id"]: None}


def test_a_send_scheduled_for_next_year_counts_on_that_day_and_cancelling_releases_it(api, key, mailbox, relay):
    usage = lambda: api.get("/mail/mailbox-usage", {"email": SENDER}, HTTP_X_API_KEY=key).json()["emails_today"]["sent"]  # noqa: E731
    next_year = timezone.now() + timedelta(days=365)
    result = send(api, key, scheduled_at=next_year.isoformat()).json()
    assert usage() == 0
    with time_machine.travel(next_year - timedelta(minutes=1)):
        assert usage() == 1  # on the day it goes out
    assert api.delete(f"/mail/scheduled/{result['scheduled_id']}", HTTP_X_API_KEY=key).status_code == 204
    with time_machine.travel(next_year - timedelta(minutes=1)):
        assert usage() == 0
    send(api, key)
    assert usage() == 1


def test_a_day_whose_quota_is_booked_refuses_another_send_for_that_day_only(api, charlie):
    make_mailbox(charlie.account, "me@charlie.test")  # free plan: 20 an hour
    key = new_key(charlie, scopes=["send"])
    tomorrow = (timezone.now() + timedelta(days=1)).replace(minute=30)
    body = {"from_email": "me@charlie.test", "to": ["x@remote.test"], "subject": "s", "body_text": "b",
            "scheduled_at": tomorrow.isoformat()}
    for _ in range(20):
        assert api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key).status_code == 200
    refused = api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)
    assert refused.status_code == 429 and "already has 20 sends booked" in refused.json()["detail"]
    now = {**body, "scheduled_at": None}
    del now["scheduled_at"]
    assert api.post("/mail/send", now, format="json", HTTP_X_API_KEY=key).status_code == 200


def test_an_idn_recipient_is_accepted_and_delivered_in_its_ascii_form(api, key, relay):
    result = send(api, key, to=["someone@exämple.org"], cc=["ünï@bücher.test"])
    assert result.status_code == 422 and "non-ASCII local part" in str(result.json()["errors"]["cc"])
    result = send(api, key, to=["someone@exämple.org"], cc=["carol@bücher.test"])
    assert result.status_code == 200, result.json()
    outbound_dispatch_due()
    [delivered] = relay.messages
    assert delivered.rcpt_tos == ["someone@xn--exmple-cua.org", "carol@xn--bcher-kva.test"]
    message = email.message_from_bytes(delivered.content, policy=policy.default)
    assert (message["To"], message["Cc"]) == ("someone@xn--exmple-cua.org", "carol@xn--bcher-kva.test")
    assert OutboundMessage.objects.get().status == "sent"


def test_a_sandbox_send_leaves_no_copy_in_sent(api, key, mailbox, relay):
    send(api, key, sandbox=True)
    send(api, key)
    assert outbound_dispatch_due() == 2
    [copy] = store_for(mailbox).list("Sent").messages
    assert copy.subject == "Hello" and len(relay.messages) == 1
