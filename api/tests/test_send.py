"""POST /mail/send end to end: validation, real SMTP delivery with DKIM, scheduling, undo, quotas,
sandbox, retries. The relay is a real SMTP server on loopback; DNS is a real server on loopback."""
import base64
import email
import threading
from datetime import timedelta
from email import policy

import dkim
import pytest
import time_machine
from django.db import connections
from django.utils import timezone

from testkit.clients import new_key
from mailcore.dnslookup import dkim_dnsfunc
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.events.models import Event
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for
from testkit.factories import make_mailbox
from testkit.smtp_sink import smtp_sink

pytestmark = pytest.mark.django_db

SENDER = "news@example.test"


@pytest.fixture
def mailbox(alice):
    from mailcore.mailboxes.services import mailbox_set_identity

    return mailbox_set_identity(mailbox=make_mailbox(alice.account, SENDER), display_name="Example News",
                                signature_html="<p>Example News &mdash; <b>weekly</b></p><script>x()</script>")


@pytest.fixture
def key(alice, mailbox):
    return new_key(alice, scopes=["send"])


def send(api, key, **fields):
    body = {"from_email": SENDER, "to": ["bob@remote.test"], "subject": "Hello", "body_text": "Hi Bob", **fields}
    body = {name: value for name, value in body.items() if value is not None}
    return api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)


def events(name):
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def parse(raw: bytes):
    return email.message_from_bytes(raw, policy=policy.default)


# validation

BAD = [
    ({"from_email": "someone@else.test"}, "from_email"),
    ({"to": []}, "to"),
    ({"to": [f"r{n}@remote.test" for n in range(51)]}, "to"),
    ({"to": ["not an address"]}, "to"),
    ({"cc": ["bad@"]}, "cc"),
    ({"bcc": ["@bad"]}, "bcc"),
    ({"reply_to": "nope"}, "reply_to"),
    ({"body_text": "", "body_html": ""}, "body_html"),
    ({"template_id": 999}, "template_id"),
    ({"attachments": [{"filename": "a.txt", "content_base64": "!!!not base64", "content_type": "text/plain"}]}, "attachments"),
    ({"scheduled_at": "2020-01-01T00:00:00Z"}, "scheduled_at"),
    ({"scheduled_at": "2099-01-01T00:00:00Z", "sandbox": True}, "scheduled_at"),
    ({"unsend_window": 0}, "unsend_window"),
    ({"unsend_window": 31}, "unsend_window"),
    ({"to": "bob@remote.test"}, "to"),
]


@pytest.mark.parametrize("fields, field", BAD)
def test_bad_input_is_422_and_queues_nothing(api, key, fields, field):
    response = send(api, key, **fields)
    assert response.status_code == 422, response.json()
    assert field in response.json()["errors"]
    assert response.json()["detail"].startswith("Validation failed")
    assert OutboundMessage.objects.count() == 0


def test_attachments_over_the_plans_cap_are_422(api, charlie):
    make_mailbox(charlie.account, "me@charlie.test")
    big = base64.b64encode(b"x" * (10 * 1024 * 1024 + 1)).decode()  # free plan: 10 MB
    response = api.post("/mail/send", {"from_email": "me@charlie.test", "to": ["a@b.test"], "body_text": "x",
                                       "attachments": [{"filename": "big.bin", "content_base64": big}]},
                        format="json", HTTP_X_API_KEY=new_key(charlie))
    assert response.status_code == 422
    assert "your plan allows 10 MB" in response.json()["errors"]["attachments"][0]


def test_sending_needs_the_send_scope(api, alice, mailbox):
    response = send(api, new_key(alice, scopes=["mailboxes:read"]))
    assert response.status_code == 403
    assert OutboundMessage.objects.count() == 0


def test_a_suspended_mailbox_cannot_send(api, key, mailbox):
    mailbox.is_active = False
    mailbox.save()
    response = send(api, key)
    assert response.status_code == 403
    assert "suspended" in response.json()["detail"]


# delivery


def test_a_message_is_delivered_dkim_signed_with_attachments_and_a_copy_in_sent(api, key, mailbox, relay, dns_zone):
    dns_zone.set("dkim._domainkey.example.test", "TXT", dkim_public_record(dkim_key_for("example.test")))
    pdf = bytes(range(256)) * 300
    response = send(api, key, to=["bob@remote.test"], cc=["carol@remote.test"], bcc=["dave@remote.test"],
                    reply_to="replies@example.test", body_html="<p>Hi <a href='https://example.test/x'>Bob</a></p>",
                    attachments=[{"filename": "report.pdf", "content_type": "application/pdf",
                                  "content_base64": base64.b64encode(pdf).decode()}])
    assert response.status_code == 200
    result = response.json()
    assert result["status"] == "sent" and result["scheduled_at"] is None and result["scheduled_id"] is None
    assert outbound_dispatch_due() == 1

    [received] = relay.messages
    assert received.mail_from == SENDER
    assert sorted(received.rcpt_tos) == ["bob@remote.test", "carol@remote.test", "dave@remote.test"]
    assert dkim.verify(received.content, dnsfunc=dkim_dnsfunc)
    message = parse(received.content)
    assert message["From"] == "Example News <news@example.test>"
    assert message["Cc"] == "carol@remote.test" and message["Bcc"] is None
    assert message["Reply-To"] == "replies@example.test"
    assert message["Message-ID"] == f"<{result['message_id']}@example.test>"
    assert message["Date"] is not None
    assert message.get_content_type() == "multipart/mixed"
    assert [part.get_content_type() for part in message.iter_parts()] == ["multipart/alternative", "application/pdf"]
    html = message.get_body(("html",)).get_content()
    assert "https://example.test/x" in html and "weekly" in html  # untracked link, signature
    assert "<script" not in html  # the signature was sanitized when it was set
    assert message.get_body(("plain",)).get_content() == "Hi Bob\r\n\r\n-- \r\nExample News \u2014 weekly\r\n"
    [attachment] = list(message.iter_attachments())
    assert attachment.get_filename() == "report.pdf" and attachment.get_content() == pdf

    sent = OutboundMessage.objects.get()
    assert (sent.status, sent.attempts) == ("sent", 1)
    [copy] = store_for(mailbox).list("Sent").messages
    assert copy.subject == "Hello" and copy.seen
    assert events("email.sent") == [{"message_id": result["message_id"], "from": SENDER, "to": ["bob@remote.test"],
                                     "cc": ["carol@remote.test"], "subject": "Hello", "scheduled_id": None,
                                     "sent_at": sent.sent_at.isoformat().replace("+00:00", "Z")}]


def test_a_tampered_message_fails_dkim_verification(api, key, mailbox, relay, dns_zone):
    dns_zone.set("dkim._domainkey.example.test", "TXT", dkim_public_record(dkim_key_for("example.test")))
    send(api, key)
    outbound_dispatch_due()
    tampered = relay.messages[0].content.replace(b"Hi Bob", b"Hi Eve")
    assert not dkim.verify(tampered, dnsfunc=dkim_dnsfunc)


def test_a_template_fills_subject_and_body_with_escaped_variables(api, key, alice, alice_api, relay):
    template = alice_api.post("/mail/templates", {"name": "Welcome", "subject": "Welcome, {{name}}",
                                                  "body_html": "<p>Hello {{ name }}, your code is {{code}}. {{unknown}}</p>"},
                              format="json").json()
    send(api, key, template_id=template["id"], variables={"name": "<Bob & co>", "code": 42}, body_text=None,
         subject=None)
    outbound_dispatch_due()
    message = parse(relay.messages[0].content)
    assert message["Subject"] == "Welcome, <Bob & co>"
    assert "Hello &lt;Bob &amp; co&gt;, your code is 42. {{unknown}}" in message.get_body(("html",)).get_content()


def test_sandbox_opens_no_connection_counts_no_quota_and_marks_events(api, key, mailbox, relay):
    response = send(api, key, sandbox=True)
    assert response.status_code == 200 and response.json()["status"] == "sent"
    assert outbound_dispatch_due() == 1
    assert relay.greetings == 0 and relay.messages == []
    [event] = events("email.sent")
    assert event["sandbox"] is True
    usage = api.get("/mail/mailbox-usage", {"email": SENDER}, HTTP_X_API_KEY=new_key(mailbox.account.users.first(), scopes=["mailboxes:read"]))
    assert usage.json()["emails_today"]["sent"] == 0


def test_temporary_failures_are_retried_with_backoff_then_sent(api, key, mailbox, relay):
    relay.refuse["bob@remote.test"] = "451 4.3.0 Try later"
    send(api, key)
    outbound_dispatch_due()
    message = OutboundMessage.objects.get()
    assert (message.status, message.attempts) == ("queued", 1)
    assert "451 4.3.0 Try later" in message.last_error
    assert outbound_dispatch_due() == 0  # not due before the backoff
    del relay.refuse["bob@remote.test"]
    with time_machine.travel(timezone.now() + timedelta(minutes=1, seconds=1)):
        assert outbound_dispatch_due() == 1
    message.refresh_from_db()
    assert (message.status, message.attempts) == ("sent", 2)
    assert len(relay.messages) == 1 and len(events("email.sent")) == 1


def test_a_permanent_failure_emits_email_failed(api, key, mailbox, relay):
    relay.refuse["bob@remote.test"] = "550 5.1.1 No such user"
    result = send(api, key).json()
    outbound_dispatch_due()
    assert OutboundMessage.objects.get().status == "failed"
    [failed] = events("email.failed")
    assert failed["message_id"] == result["message_id"]
    assert failed["recipients"] == [{"recipient": "bob@remote.test", "reply": "550 5.1.1 No such user"}]
    assert events("email.sent") == []


def test_retries_run_out_after_five_attempts(api, key, mailbox, relay):
    relay.refuse["bob@remote.test"] = "421 4.4.2 Busy"
    send(api, key)
    moment = timezone.now()
    for _ in range(5):
        with time_machine.travel(moment):
            outbound_dispatch_due()
        moment += timedelta(hours=2)
    message = OutboundMessage.objects.get()
    assert (message.status, message.attempts) == ("failed", 5)
    assert events("email.failed")[0]["recipients"] == [{"recipient": "bob@remote.test", "reply": "retries exhausted"}]


# scheduling and undo


def test_scheduled_mail_waits_lists_and_goes_out_when_due(api, key, mailbox, relay):
    when = timezone.now() + timedelta(hours=2)
    result = send(api, key, scheduled_at=when.isoformat()).json()
    assert result["status"] == "scheduled" and result["scheduled_id"]
    listed = api.get("/mail/scheduled", HTTP_X_API_KEY=key).json()
    assert [(item["scheduled_id"], item["to"], item["is_undo_window"]) for item in listed] == [
        (result["scheduled_id"], ["bob@remote.test"], False)]
    assert outbound_dispatch_due() == 0 and relay.messages == []
    with time_machine.travel(when + timedelta(seconds=1)):
        assert outbound_dispatch_due() == 1
    assert len(relay.messages) == 1
    assert api.get("/mail/scheduled", HTTP_X_API_KEY=key).json() == []
    assert api.delete(f"/mail/scheduled/{result['scheduled_id']}", HTTP_X_API_KEY=key).status_code == 404


def test_cancelling_stops_it_and_gives_the_quota_back(api, key, mailbox, relay):
    result = send(api, key, unsend_window=10).json()
    assert result["status"] == "scheduled"
    assert api.delete(f"/mail/scheduled/{result['scheduled_id']}", HTTP_X_API_KEY=key).status_code == 204
    with time_machine.travel(timezone.now() + timedelta(seconds=11)):
        assert outbound_dispatch_due() == 0
    assert relay.messages == [] and OutboundMessage.objects.get().status == "cancelled"
    assert mailbox.daily_usage.get().sends == 0


def test_the_undo_window_holds_the_message_for_its_seconds(api, key, mailbox, relay):
    send(api, key, unsend_window=5)
    assert outbound_dispatch_due() == 0
    with time_machine.travel(timezone.now() + timedelta(seconds=6)):
        assert outbound_dispatch_due() == 1
    assert len(relay.messages) == 1


def test_another_accounts_scheduled_mail_is_404(api, key, mailbox, charlie):
    result = send(api, key, unsend_window=30).json()
    response = api.delete(f"/mail/scheduled/{result['scheduled_id']}", HTTP_X_API_KEY=new_key(charlie))
    assert response.status_code == 404
    assert api.get("/mail/scheduled", HTTP_X_API_KEY=new_key(charlie)).json() == []
    assert OutboundMessage.objects.get().status == "scheduled"


# quotas


def test_over_the_hourly_quota_the_answer_is_429_with_retry_after(api, charlie):
    make_mailbox(charlie.account, "me@charlie.test")  # free plan: 20 an hour
    key = new_key(charlie)
    body = {"from_email": "me@charlie.test", "to": ["a@b.test"], "body_text": "x"}
    for _ in range(20):
        assert api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key).status_code == 200
    response = api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 3600
    assert "hourly limit of 20" in response.json()["detail"]
    assert response.json()["detail"].endswith(f"Expected available in {response['Retry-After']} seconds.")
    assert OutboundMessage.objects.count() == 20
    sandbox = api.post("/mail/send", {**body, "sandbox": True}, format="json", HTTP_X_API_KEY=key)
    assert sandbox.status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_quota_holds_under_concurrent_requests(plans, charlie_factory):
    from mailcore.sending.quota import SendQuotaExceeded, quota_reserve

    user = charlie_factory()
    mailbox = make_mailbox(user.account, "busy@charlie.test")
    accepted, refused = [], []

    def worker():
        try:
            for _ in range(10):
                try:
                    quota_reserve(mailbox=mailbox)
                    accepted.append(1)
                except SendQuotaExceeded:
                    refused.append(1)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (len(accepted), len(refused)) == (20, 20)  # free plan: 20 an hour, 40 attempts


@pytest.mark.django_db(transaction=True)
def test_two_workers_send_a_due_message_exactly_once(plans, charlie_factory, settings):
    from mailcore.sending.inputs import SendRequest
    from mailcore.sending.services import mail_send

    user = charlie_factory()
    make_mailbox(user.account, "once@charlie.test")
    with smtp_sink() as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        for n in range(6):
            mail_send(account=user.account, user=user,
                      request=SendRequest(from_email="once@charlie.test", to=[f"r{n}@remote.test"], body_text="x"))
        barrier = threading.Barrier(2)

        def worker():
            try:
                barrier.wait()
                outbound_dispatch_due()
            finally:
                connections.close_all()

        threads = [threading.Thread(target=worker) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert sorted(m.rcpt_tos[0] for m in sink.messages) == [f"r{n}@remote.test" for n in range(6)]
    assert Event.objects.filter(name="email.sent").count() == 6


# embedded mode


def test_without_a_relay_hosted_mail_is_delivered_and_the_rest_kept_in_the_outbox(api, key, alice, settings, tmp_path):
    settings.SMTP_URL = ""
    settings.DATA_DIR = tmp_path
    colleague = make_mailbox(alice.account, "colleague@example.test")
    send(api, key, to=["colleague@example.test", "bob@remote.test"])
    outbound_dispatch_due()
    [delivered] = store_for(colleague).list().messages
    assert delivered.subject == "Hello"
    [kept] = list((tmp_path / "outbox").glob("*.eml"))
    assert b"X-Outbox-Envelope-To: <bob@remote.test>" in kept.read_bytes()
    assert OutboundMessage.objects.get().status == "sent"


def test_a_refusal_on_an_early_attempt_is_remembered_when_the_rest_never_gets_through(api, key, mailbox, relay):
    relay.refuse["bob@remote.test"] = "550 5.1.1 No such user"
    relay.refuse["carol@remote.test"] = "451 4.3.0 Later"
    send(api, key, to=["bob@remote.test", "carol@remote.test"])
    moment = timezone.now()
    for _ in range(5):
        with time_machine.travel(moment):
            outbound_dispatch_due()
        moment += timedelta(hours=2)
    assert OutboundMessage.objects.get().status == "failed"
    assert events("email.sent") == []
    assert events("email.failed")[0]["recipients"] == [
        {"recipient": "bob@remote.test", "reply": "550 5.1.1 No such user"},
        {"recipient": "carol@remote.test", "reply": "retries exhausted"}]
