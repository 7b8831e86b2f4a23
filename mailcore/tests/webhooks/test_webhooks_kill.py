"""200 webhook deliveries to a slow HTTPS receiver; the worker delivering them (`manage.py worker`,
or Celery's worker with beat) is killed with SIGKILL in the middle and started again.

Delivery is at least once: a POST the receiver answered but the dead worker had not recorded goes
again, with the same `X-Service-Delivery` header, so a receiver that drops a header it has seen
processes every delivery exactly once. Only deliveries not yet recorded delivered when the worker
died may come twice; every one is delivered in the end. The receiver is a real HTTPS server on
loopback (testkit.https_receiver) that answers each request after a delay."""
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from mailcore.events.models import WebhookDelivery
from mailcore.events.services import emit
from mailcore.webhooks.services import endpoint_create
from testkit.https_receiver import https_receiver, verify
from testkit.worker_process import CELERY_WORKER, EMBEDDED_WORKER, WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the worker process reads what the test committed

ENDPOINTS = 4
EVENTS = 50  # each to every endpoint: 200 deliveries
DELIVERIES = ENDPOINTS * EVENTS
KILL_AFTER = 80  # requests the receiver has seen


@pytest.fixture
def slow_receiver(settings, tmp_path):
    """A customer's HTTPS receiver that takes 50 ms over each request, HTTP/1.1 kept alive."""
    with https_receiver(tmp_path, keep_alive=True) as receiver:
        receiver.delay = 0.05
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = receiver.ca_path
        yield receiver


def first_hits(receiver) -> dict[str, object]:
    """What a receiver that drops a delivery id it has seen processes: the first hit of each."""
    first = {}
    for hit in receiver.hits:
        first.setdefault(hit.delivery, hit)
    return first


@pytest.mark.parametrize("command", [EMBEDDED_WORKER, CELERY_WORKER], ids=["embedded", "celery"])
def test_a_worker_killed_mid_burst_leaves_every_delivery_processed_exactly_once_by_its_id(
        plans, alice, slow_receiver, tmp_path, command):
    secrets = {}
    for n in range(ENDPOINTS):
        _, secrets[f"/hook{n}"] = endpoint_create(account=alice.account, url=slow_receiver.url(f"/hook{n}"),
                                                  events=["email.received"])
    for n in range(EVENTS):
        emit(account=alice.account, name="email.received", data={"message_id": f"<m{n}@x>", "subject": f"Hi {n}"})
    ids = {str(pk) for pk in WebhookDelivery.objects.values_list("pk", flat=True)}
    assert len(ids) == DELIVERIES
    environment = {"WEBHOOK_ALLOW_PRIVATE": "1", "WEBHOOK_CA_BUNDLE": slow_receiver.ca_path,
                   "WEBHOOK_CONCURRENCY": str(ENDPOINTS), "WORKER_PROCESSES": "1"}
    worker = WorkerProcess(tmp_path / "worker", command, **environment)
    again = WorkerProcess(tmp_path / "again", command, **environment)
    try:
        worker.start()
        wait_until(lambda: len(slow_receiver.hits) >= KILL_AFTER, what=f"{KILL_AFTER} requests", workers=[worker])
        worker.kill()
        seen = {hit.delivery for hit in slow_receiver.hits}
        recorded = {str(pk) for pk in WebhookDelivery.objects.filter(status="delivered").values_list("pk", flat=True)}
        assert recorded < seen < ids  # killed mid-burst, with requests the receiver took and no outcome recorded
        # The dead worker's claims run out (CLAIM_SECONDS) before another takes them.
        WebhookDelivery.objects.filter(status="pending").update(claimed_until=timezone.now() - timedelta(seconds=1))
        again.start()
        wait_until(lambda: WebhookDelivery.objects.filter(status="delivered").count() == DELIVERIES,
                   what=f"all {DELIVERIES} delivered", workers=[worker, again])
    finally:
        worker.stop()
        again.stop()

    hits = slow_receiver.hits
    assert all(verify(secrets[hit.path], hit.signature, hit.body) for hit in hits)
    processed = first_hits(slow_receiver)
    assert set(processed) == ids
    assert {path: sorted(hit.envelope["data"]["subject"] for hit in processed.values() if hit.path == path)
            for path in secrets} == {path: sorted(f"Hi {n}" for n in range(EVENTS)) for path in secrets}
    repeats = Counter(hit.delivery for hit in hits) - Counter(set(processed))
    assert set(repeats) <= seen - recorded  # only what the receiver saw and the dead worker had not recorded
    assert set(repeats.values()) <= {1}  # went again once, after the restart
    assert all(hit.body == processed[hit.delivery].body for hit in hits)  # a repeat is the same delivery
    assert set(WebhookDelivery.objects.values_list("status", "claimed_until")) == {("delivered", None)}
    assert "Traceback" not in worker.output() + again.output()
