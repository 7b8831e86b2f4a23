"""One delivery run (webhooks_deliver_due) as a receiver and the rows see it: deliveries to an
endpoint share a kept-alive connection verified for its host name, batches follow one another in
the same call, every outcome of a batch is recorded, and a slow endpoint does not keep the others
from being recorded delivered."""
import threading
from datetime import timedelta

import pytest
import time_machine
from django.db import connections
from django.utils import timezone

from mailcore.events.models import WebhookDelivery
from mailcore.events.services import emit
from mailcore.webhooks.delivery import webhooks_deliver_due
from mailcore.webhooks.services import endpoint_create, endpoint_update
from testkit.factories import UserFactory
from testkit.https_receiver import https_receiver
from testkit.worker_process import wait_until


def hook(account, receiver, path="/hook", host="localhost", **fields):
    endpoint, secret = endpoint_create(account=account, url=receiver.url(path, host=host), events=["email.received"],
                                       **fields)
    receiver.secret = secret
    return endpoint


def received(account, count=1):
    for n in range(count):
        emit(account=account, name="email.received", data={"message_id": f"<m{n}@x>", "subject": f"Hi {n}"})


@pytest.fixture
def keep_alive_receiver(settings, tmp_path):
    with https_receiver(tmp_path, keep_alive=True) as receiver:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = receiver.ca_path
        settings.WEBHOOK_CONCURRENCY = 4
        yield receiver


@pytest.mark.django_db
def test_deliveries_to_one_endpoint_travel_over_one_connection_in_the_order_they_fell_due(alice, keep_alive_receiver):
    hook(alice.account, keep_alive_receiver)
    received(alice.account, 5)
    assert webhooks_deliver_due() == 5
    ids = list(WebhookDelivery.objects.order_by("id").values_list("id", flat=True))
    assert [hit.delivery for hit in keep_alive_receiver.hits] == [str(pk) for pk in ids]
    assert [hit.envelope["data"]["subject"] for hit in keep_alive_receiver.hits] == [f"Hi {n}" for n in range(5)]
    assert all(hit.signature_valid for hit in keep_alive_receiver.hits)
    assert keep_alive_receiver.connections == 1
    assert {hit.connection for hit in keep_alive_receiver.hits} == {1}


@pytest.mark.django_db
def test_a_connection_is_reused_only_for_the_host_name_it_was_verified_for(alice, keep_alive_receiver, settings):
    settings.WEBHOOK_CONCURRENCY = 1
    hook(alice.account, keep_alive_receiver, "/by-name", host="localhost")
    hook(alice.account, keep_alive_receiver, "/by-address", host="127.0.0.1")  # same address, another name
    received(alice.account, 3)
    assert webhooks_deliver_due() == 6
    by_path = {hit.path: set() for hit in keep_alive_receiver.hits}
    for hit in keep_alive_receiver.hits:
        by_path[hit.path].add((hit.connection, hit.host))
    port = keep_alive_receiver.port
    assert by_path == {"/by-name": {(1, f"localhost:{port}")}, "/by-address": {(2, f"127.0.0.1:{port}")}}
    assert keep_alive_receiver.connections == 2


@pytest.mark.django_db
def test_one_call_claims_batch_after_batch_until_nothing_is_due(alice, keep_alive_receiver):
    hook(alice.account, keep_alive_receiver, "/one")
    hook(alice.account, keep_alive_receiver, "/two")
    received(alice.account, 7)
    assert webhooks_deliver_due(limit=3) == 14
    assert sorted(int(hit.delivery) for hit in keep_alive_receiver.hits) == sorted(
        WebhookDelivery.objects.values_list("id", flat=True))
    assert set(WebhookDelivery.objects.values_list("status", "attempts", "claimed_until")) == {("delivered", 1, None)}
    assert webhooks_deliver_due() == 0 and len(keep_alive_receiver.hits) == 14


@pytest.mark.django_db
def test_every_outcome_of_a_batch_is_recorded_on_its_own_row(alice, keep_alive_receiver, settings, tmp_path):
    (tmp_path / "failing").mkdir()
    with https_receiver(tmp_path / "failing", keep_alive=True) as failing:
        failing.status, failing.body = 503, b"busy"
        settings.WEBHOOK_CA_BUNDLE = str(tmp_path / "both.pem")
        (tmp_path / "both.pem").write_text(open(keep_alive_receiver.ca_path).read() + open(failing.ca_path).read())
        good = hook(alice.account, keep_alive_receiver, "/good")
        bad = hook(alice.account, failing, "/bad")
        refused = hook(alice.account, keep_alive_receiver, "/refused", allowed_ips=["192.0.2.0/24"])
        paused = hook(alice.account, keep_alive_receiver, "/paused")
        start = timezone.now()
        with time_machine.travel(start, tick=False):
            received(alice.account, 2)
            endpoint_update(endpoint=paused, is_active=False)  # its two deliveries were already pending
            assert webhooks_deliver_due() == 8

    def rows(endpoint):
        return set(WebhookDelivery.objects.filter(endpoint=endpoint).values_list(
            "status", "attempts", "response_status", "response_body", "last_error", "next_attempt_at",
            "claimed_until", "delivered_at"))

    assert rows(good) == {("delivered", 1, 200, "ok", "", None, None, start)}
    assert rows(bad) == {("pending", 1, 503, "busy", "the endpoint answered 503", start + timedelta(minutes=1), None,
                          None)}
    [refusal] = {row[4] for row in rows(refused)}
    assert {row[:4] + row[5:] for row in rows(refused)} == {("failed", 1, None, "", None, None, None)}
    assert "no address in the endpoint's allowed_ips" in refusal
    assert rows(paused) == {("pending", 0, None, "", "", start + timedelta(minutes=1), None, None)}
    assert sorted(hit.path for hit in keep_alive_receiver.hits) == ["/good", "/good"]
    assert [hit.path for hit in failing.hits] == ["/bad", "/bad"]


@pytest.mark.django_db(transaction=True)
def test_a_slow_endpoint_does_not_keep_the_others_from_being_recorded_delivered(plans, settings, tmp_path):
    user = UserFactory(account__plan_code="premium")
    (tmp_path / "slow").mkdir()
    with https_receiver(tmp_path, keep_alive=True) as fast, https_receiver(tmp_path / "slow", keep_alive=True) as slow:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CONCURRENCY = 4
        settings.WEBHOOK_CA_BUNDLE = str(tmp_path / "both.pem")
        (tmp_path / "both.pem").write_text(open(fast.ca_path).read() + open(slow.ca_path).read())
        slow.hold = threading.Event()  # the slow endpoint answers only when the test says so
        slow_endpoint = hook(user.account, slow, "/slow")
        fast_endpoints = [hook(user.account, fast, f"/fast/{n}") for n in range(3)]
        received(user.account, 2)
        claimed = []

        def run():
            try:
                claimed.append(webhooks_deliver_due())
            finally:
                connections.close_all()

        worker = threading.Thread(target=run)
        worker.start()
        try:
            wait_until(lambda: WebhookDelivery.objects.filter(endpoint__in=fast_endpoints, status="delivered").count()
                       == 6, timeout=30, what="the fast endpoints' deliveries recorded")
            assert len(slow.hits) == 1  # its first delivery is still unanswered, the second waits behind it
            assert set(WebhookDelivery.objects.filter(endpoint=slow_endpoint).values_list("status", "attempts")) == {
                ("pending", 0)}
        finally:
            slow.hold.set()
            worker.join(60)
    assert claimed == [8]
    assert set(WebhookDelivery.objects.values_list("status", "attempts")) == {("delivered", 1)}
    assert len(fast.hits) == 6 and len(slow.hits) == 2


@pytest.mark.django_db(transaction=True)
def test_the_threads_that_post_open_no_database_connection(plans, settings, tmp_path):
    from django.db.backends.signals import connection_created

    user = UserFactory(account__plan_code="premium")
    opened_by: list[str] = []

    def opened(sender, connection, **kwargs):
        opened_by.append(threading.current_thread().name)

    with https_receiver(tmp_path, keep_alive=True) as receiver:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = receiver.ca_path
        settings.WEBHOOK_CONCURRENCY = 4
        for n in range(4):
            hook(user.account, receiver, f"/hook/{n}")
        received(user.account, 3)
        connections.close_all()
        connection_created.connect(opened)
        try:
            assert webhooks_deliver_due() == 12
        finally:
            connection_created.disconnect(opened)
    assert opened_by == [threading.current_thread().name]  # the run's own, to claim and record
    assert len(receiver.hits) == 12
