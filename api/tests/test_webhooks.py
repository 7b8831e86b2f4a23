"""Webhooks end to end: management, signed delivery to a real HTTPS receiver, the retry schedule,
retry and replay, SSRF refusals, paused endpoints, tenant isolation."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from testkit.clients import new_key
from testkit.clients import login_client
from mailcore.events.services import emit
from testkit.factories import UserFactory
from testkit.https_receiver import https_receiver
from mailcore.webhooks.delivery import webhooks_deliver_due
from mailcore.events.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def subscribe(client, receiver, events=("email.received",), **fields):
    response = client.post("/webhooks", {"url": receiver.url(), "events": list(events), **fields}, format="json")
    assert response.status_code == 201, response.json()
    receiver.secret = response.json()["secret"]
    return response.json()


def received(alice, subject="Hi"):
    return emit(account=alice.account, name="email.received", data={"message_id": "<m@x>", "subject": subject})


# management


def test_create_returns_the_secret_once_and_the_list_never_does(alice_api, receiver):
    created = subscribe(alice_api, receiver, events=["email.received", "email.sent"], allowed_ips=["127.0.0.1"])
    assert created["secret"].startswith("whsec_")
    assert (created["url"], created["events"], created["allowed_ips"], created["is_active"]) == (
        receiver.url(), ["email.received", "email.sent"], ["127.0.0.1/32"], True)
    listed = alice_api.get("/webhooks").json()
    assert [set(item) for item in listed] == [{"id", "url", "events", "allowed_ips", "is_active", "created_at"}]
    assert created["secret"] not in str(listed)
    assert created["secret"] not in WebhookEndpoint.objects.get().secret_encrypted


@pytest.mark.parametrize("payload, field", [
    ({"url": "http://example.com/hook", "events": ["email.sent"]}, "url"),
    ({"url": "https://example.com/hook", "events": ["email.teleported"]}, "events"),
    ({"url": "https://example.com/hook", "events": []}, "events"),
    ({"url": "https://example.com/hook", "events": ["email.sent"], "allowed_ips": ["nope"]}, "allowed_ips"),
    ({"url": "not a url", "events": ["email.sent"]}, "url"),
])
def test_bad_endpoints_are_422_and_create_nothing(alice_api, payload, field):
    response = alice_api.post("/webhooks", payload, format="json")
    assert response.status_code == 422 and field in response.json()["errors"]
    assert WebhookEndpoint.objects.count() == 0


def test_at_most_ten_endpoints(alice_api):
    for n in range(10):
        assert alice_api.post("/webhooks", {"url": f"https://example.com/{n}", "events": ["email.sent"]},
                              format="json").status_code == 201
    response = alice_api.post("/webhooks", {"url": "https://example.com/11", "events": ["email.sent"]}, format="json")
    assert response.status_code == 422 and "at most 10" in response.json()["detail"]
    assert WebhookEndpoint.objects.count() == 10


def test_update_pauses_and_replaces_allowed_ips_but_not_url_or_events(alice_api, receiver):
    endpoint = subscribe(alice_api, receiver)
    patched = alice_api.patch(f"/webhooks/{endpoint['id']}", {"is_active": False, "allowed_ips": ["127.0.0.0/8"]},
                              format="json").json()
    assert (patched["is_active"], patched["allowed_ips"]) == (False, ["127.0.0.0/8"])
    for field, value in (("url", "https://other.example/x"), ("events", ["email.sent"])):
        response = alice_api.patch(f"/webhooks/{endpoint['id']}", {field: value}, format="json")
        assert response.status_code == 422 and field in response.json()["errors"]
    assert WebhookEndpoint.objects.get().url == receiver.url()


def test_rotate_secret_signs_with_the_new_secret(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver)
    old = receiver.secret
    rotated = alice_api.post(f"/webhooks/{endpoint['id']}/rotate-secret").json()
    assert rotated["secret"] != old
    receiver.secret = rotated["secret"]
    received(alice)
    webhooks_deliver_due()
    assert receiver.hits[-1].signature_valid


def test_the_test_call_sends_a_sample_at_once_and_reports_the_answer(alice_api, receiver):
    endpoint = subscribe(alice_api, receiver)
    receiver.status, receiver.body = 202, b"thanks"
    result = alice_api.post(f"/webhooks/{endpoint['id']}/test").json()
    assert result == {"delivered": True, "response_status": 202, "response_body": "thanks", "error": ""}
    [hit] = receiver.hits
    assert hit.signature_valid and hit.envelope["event"] == "email.received"
    assert hit.envelope["data"]["test"] is True
    assert WebhookDelivery.objects.count() == 0


def test_webhooks_need_the_premium_plan(charlie_api):
    response = charlie_api.get("/webhooks")
    assert response.status_code == 403
    assert response.json() == {"detail": "Webhooks needs the Premium plan; your plan does not include it."}


@pytest.mark.parametrize(("status", "allowed"), [("trial", True), ("active", True), ("pending", False),
                                                  ("expired", False), ("suspended", False)])
def test_a_working_partner_on_the_free_plan_has_webhooks(charlie, charlie_api, status, allowed):
    from mailcore.partners.services import hosting_partner_enable

    hosting_partner_enable(account=charlie.account, status=status)
    created = charlie_api.post("/webhooks", {"url": "https://hooks.example.com/in",
                                             "events": ["partner_mailbox.created"]}, format="json")
    assert created.status_code == (201 if allowed else 403), created.content
    assert charlie_api.get("/webhooks").status_code == (200 if allowed else 403)


def test_an_api_key_with_the_webhooks_scope_can_subscribe_and_unsubscribe(api, alice):
    key = new_key(alice, scopes=["webhooks"])
    created = api.post("/webhooks", {"url": "https://hooks.zapier.example/catch/1", "events": ["email.received"]},
                       format="json", HTTP_X_API_KEY=key)
    assert created.status_code == 201
    assert api.delete(f"/webhooks/{created.json()['id']}", HTTP_X_API_KEY=key).status_code == 204
    assert WebhookEndpoint.objects.count() == 0
    refused = api.get("/webhooks", HTTP_X_API_KEY=new_key(alice, scopes=["send"]))
    assert refused.status_code == 403


def test_another_accounts_endpoint_is_404_everywhere(alice_api, receiver):
    endpoint = subscribe(alice_api, receiver)
    stranger = login_client(UserFactory(account__plan_code="premium"))
    base = f"/webhooks/{endpoint['id']}"
    for method, path in [("get", base), ("patch", base), ("delete", base), ("post", f"{base}/rotate-secret"),
                         ("post", f"{base}/test"), ("get", f"{base}/deliveries")]:
        assert getattr(stranger, method)(path, {"is_active": False}, format="json").status_code == 404, path
    assert stranger.get("/webhooks").json() == []
    assert WebhookEndpoint.objects.get().is_active and receiver.hits == []


# delivery


def test_an_event_is_delivered_signed_as_compact_json_to_the_checked_address(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver, events=["email.received"])
    event = received(alice)
    emit(account=alice.account, name="email.sent", data={"message_id": "x"})  # not subscribed
    assert webhooks_deliver_due() == 1
    [hit] = receiver.hits
    assert hit.signature_valid
    assert hit.delivery == str(WebhookDelivery.objects.get().pk)  # for receivers to drop repeats
    assert hit.host == f"localhost:{receiver.port}"  # Host header and SNI carry the name; we connected to the IP
    assert b" " not in hit.body.replace(b'"Hi"', b"")  # compact JSON
    assert hit.envelope == {"event": "email.received", "timestamp": event.created_at.isoformat().replace("+00:00", "Z"),
                            "webhook_id": str(endpoint["id"]), "data": {"message_id": "<m@x>", "subject": "Hi"}}
    [delivery] = alice_api.get(f"/webhooks/{endpoint['id']}/deliveries").json()
    assert (delivery["status"], delivery["attempts"], delivery["response_status"]) == ("delivered", 1, 200)
    assert delivery["data"] == {"message_id": "<m@x>", "subject": "Hi"}


def test_sandbox_events_carry_sandbox_true(alice_api, alice, receiver):
    subscribe(alice_api, receiver, events=["email.sent"])
    emit(account=alice.account, name="email.sent", data={"message_id": "x"}, sandbox=True)
    webhooks_deliver_due()
    assert receiver.hits[0].envelope["data"] == {"message_id": "x", "sandbox": True}


def test_failures_follow_the_retry_schedule_then_die_after_five(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver)
    receiver.status = 500
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        received(alice)
        webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    moments = [start]
    for minutes in (1, 2, 4, 8):
        assert (delivery.status, delivery.next_attempt_at - moments[-1]) == ("pending", timedelta(minutes=minutes))
        with time_machine.travel(delivery.next_attempt_at - timedelta(seconds=1), tick=False):
            assert webhooks_deliver_due() == 0  # not before its time
        with time_machine.travel(delivery.next_attempt_at, tick=False):
            moments.append(delivery.next_attempt_at)
            assert webhooks_deliver_due() == 1
        delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("dead", 5, 500)
    assert len(receiver.hits) == 5
    with time_machine.travel(start + timedelta(hours=1)):
        assert webhooks_deliver_due() == 0


def test_retry_gives_a_dead_delivery_one_fresh_attempt_on_the_same_row(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver)
    receiver.status = 503
    received(alice)
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="dead", attempts=5)
    base = f"/webhooks/{endpoint['id']}/deliveries/{delivery.pk}"
    failed_again = alice_api.post(f"{base}/retry").json()
    assert (failed_again["id"], failed_again["status"], failed_again["attempts"]) == (delivery.pk, "dead", 1)
    receiver.status = 200
    retried = alice_api.post(f"{base}/retry").json()
    assert (retried["id"], retried["status"], retried["attempts"], retried["response_status"]) == (
        delivery.pk, "delivered", 1, 200)
    refused = alice_api.post(f"{base}/retry")
    assert refused.status_code == 400 and "dead or failed" in refused.json()["detail"]
    assert WebhookDelivery.objects.count() == 1


def test_replay_creates_a_new_delivery_pointing_to_the_original(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver)
    received(alice)
    webhooks_deliver_due()
    original = WebhookDelivery.objects.get()
    replay = alice_api.post(f"/webhooks/{endpoint['id']}/deliveries/{original.pk}/replay")
    assert replay.status_code == 201
    body = replay.json()
    assert body["id"] != original.pk and body["replayed_from_id"] == original.pk and body["status"] == "pending"
    webhooks_deliver_due()
    assert [hit.envelope["data"] for hit in receiver.hits] == [{"message_id": "<m@x>", "subject": "Hi"}] * 2


def test_paused_endpoints_get_nothing(alice_api, alice, receiver):
    endpoint = subscribe(alice_api, receiver)
    alice_api.patch(f"/webhooks/{endpoint['id']}", {"is_active": False}, format="json")
    received(alice)
    assert webhooks_deliver_due() == 0
    assert receiver.hits == [] and WebhookDelivery.objects.count() == 0


def test_redirects_are_not_followed_and_answers_are_read_only_up_to_a_cap(alice_api, alice, receiver):
    subscribe(alice_api, receiver)
    receiver.status, receiver.headers, receiver.body = 302, {"Location": "https://169.254.169.254/"}, b"x" * 100_000
    received(alice)
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.response_status, len(delivery.response_body)) == ("pending", 302, 4096)
    assert len(receiver.hits) == 1


# SSRF


@pytest.mark.parametrize("url, reason", [
    ("https://10.1.2.3/hook", "a private address"),
    ("https://192.168.0.10/hook", "a private address"),
    ("https://169.254.169.254/latest/meta-data", "a link-local address"),
    ("https://[fe80::1]/hook", "a link-local address"),
    ("https://224.0.0.1/hook", "a multicast address"),
    ("https://240.0.0.1/hook", "a reserved address"),
    ("https://0.0.0.0/hook", "an unspecified address"),
    ("https://127.0.0.1/hook", "a loopback address"),
    ("https://localhost/hook", "localhost does not resolve to a public address"),
    ("https://[::1]/hook", "a loopback address"),
    ("https://[::ffff:10.0.0.1]/hook", "a private address"),
])
def test_unsafe_destinations_are_refused_without_a_connection(alice_api, alice, settings, url, reason):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    settings.WEBHOOK_CONCURRENCY = 1
    endpoint = alice_api.post("/webhooks", {"url": url, "events": ["email.received"]}, format="json").json()
    received(alice)
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == 1
    assert reason in delivery.last_error
    test = alice_api.post(f"/webhooks/{endpoint['id']}/test").json()
    assert test["delivered"] is False and reason in test["error"]


def test_allowed_ips_restrict_the_resolved_address(alice_api, alice, receiver):
    subscribe(alice_api, receiver, allowed_ips=["192.0.2.0/24"])
    received(alice)
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "no address in the endpoint's allowed_ips" in delivery.last_error
    assert receiver.hits == []


def test_an_unknown_certificate_is_not_trusted(alice_api, alice, receiver, settings):
    subscribe(alice_api, receiver)
    settings.WEBHOOK_CA_BUNDLE = ""
    received(alice)
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert receiver.hits == []


def test_a_delivery_in_flight_elsewhere_is_not_sent_twice_and_a_crashed_claim_is_picked_up(alice_api, alice, receiver):
    subscribe(alice_api, receiver)
    received(alice)
    now = timezone.now()
    WebhookDelivery.objects.update(claimed_until=now + timedelta(seconds=60))  # another worker holds it
    assert webhooks_deliver_due() == 0 and receiver.hits == []
    with time_machine.travel(now + timedelta(seconds=61)):  # that worker died: its claim expires
        assert webhooks_deliver_due() == 1
    assert len(receiver.hits) == 1 and WebhookDelivery.objects.get().status == "delivered"


@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_hold_up_the_others(plans, settings, tmp_path):
    import time

    user = UserFactory(account__plan_code="premium")
    client = login_client(user)
    with https_receiver(tmp_path) as slow:
        (tmp_path / "fast").mkdir()
        with https_receiver(tmp_path / "fast") as fast:
            settings.WEBHOOK_ALLOW_PRIVATE = True
            settings.WEBHOOK_CONCURRENCY = 8
            bundle = tmp_path / "both.pem"
            bundle.write_text(open(slow.ca_path).read() + open(fast.ca_path).read())
            settings.WEBHOOK_CA_BUNDLE = str(bundle)
            slow.delay = 3
            subscribe(client, slow)
            subscribe(client, fast)
            emit(account=user.account, name="email.received", data={"subject": "x"})
            started = time.monotonic()
            assert webhooks_deliver_due() == 2
            finished = time.monotonic()
    assert fast.hits[0].received_at - started < 1.5
    assert finished - started >= 3
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_a_host_that_does_not_resolve_is_retried_not_failed(alice_api, alice, settings):
    settings.WEBHOOK_CONCURRENCY = 1
    alice_api.post("/webhooks", {"url": "https://no-such-host.invalid/hook", "events": ["email.received"]},
                   format="json")
    received(alice)
    webhooks_deliver_due()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert "does not resolve" in delivery.last_error and delivery.next_attempt_at is not None


def test_test_calls_are_limited_per_account_with_429_and_retry_after(alice_api, receiver, settings):
    settings.WEBHOOK_TESTS_PER_HOUR = 2
    endpoint = subscribe(alice_api, receiver)

    answers = [alice_api.post(f"/webhooks/{endpoint['id']}/test") for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[2].json()["detail"].startswith("At most 2 webhook tests an hour.")
    assert 3500 < int(answers[2]["Retry-After"]) <= 3600
    assert len(receiver.hits) == 2  # the refused one called nobody
