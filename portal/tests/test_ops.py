"""What an operator's tooling reads: /healthz and /readyz (each service the settings name, checked
for real), Prometheus metrics (queues, outcomes, request latency; only for the operator's network
or token), request ids in every answer and in JSON log lines."""
import json
import socket
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from mailcore.outbound.models import OutboundMessage
from testkit.clients import key_client
from testkit.django_process import PRODUCTION, django_probe
from testkit.factories import make_mailbox
from testkit.smtp_sink import free_port, smtp_sink

pytestmark = pytest.mark.django_db


def test_healthz_answers_while_the_process_runs(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_checks_the_database_and_each_service_the_settings_name(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    with smtp_sink() as (port, _):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["status"] == "ready"
    assert response.json()["checks"] == {"database": "ok", "redis": "ok", "relay": "ok"}


def test_readyz_says_plainly_that_scanning_is_off_without_rspamd(client, settings):
    settings.RSPAMD_URL = ""

    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["scanners"] == {
        "rspamd": "off", "clamav": "off", "bayes": "off",
        "summary": "Scanning is off: RSPAMD_URL is not set, so inbound mail is not scanned for spam or viruses.",
    }
    assert "rspamd" not in response.json()["checks"]


def test_readyz_checks_rspamd_and_clamd_and_says_which_scanners_are_on(client, rspamd_settings):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json()["checks"]["rspamd"] == "ok"
    assert response.json()["checks"]["clamav"] == "ok"
    assert response.json()["scanners"] == {
        "rspamd": "on", "clamav": "on", "bayes": "on",
        "summary": "rspamd: spam scanning on, virus scanning on, learning on",
    }


def test_readyz_is_503_when_rspamd_does_not_answer(client, settings):
    settings.RSPAMD_URL = f"http://127.0.0.1:{free_port()}"
    settings.RSPAMD_CONTROLLER_URL = f"http://127.0.0.1:{free_port()}"

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["rspamd"] == "failed: rspamd does not answer"
    assert response.json()["scanners"]["rspamd"] == "down"
    assert "inbound mail is deferred (451)" in response.json()["scanners"]["summary"]


def test_readyz_is_503_naming_what_is_not_ready(client, settings):
    settings.SMTP_URL = f"smtp://127.0.0.1:{free_port()}"  # nothing listens there
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json()["status"] == "not ready"
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["relay"].startswith("failed: ")
    assert response.json()["checks"]["redis"].startswith("failed: ")


@pytest.mark.django_db(transaction=True)
def test_readyz_reaches_dovecot_when_mail_is_stored_there(client, imap_settings):
    response = client.get("/readyz")
    assert response.json()["checks"]["dovecot"] == "ok"


def test_readyz_fails_when_dovecot_does_not_greet(client, settings):
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        settings.MAIL_STORE = "imap"
        settings.IMAP_HOST, settings.IMAP_PORT, settings.IMAP_TLS = "127.0.0.1", silent.getsockname()[1], False
        response = client.get("/readyz")
    assert response.status_code == 503 and response.json()["checks"]["dovecot"] == "failed: TimeoutError"


def test_readyz_answers_in_time_when_the_relay_accepts_and_never_greets(client, settings):
    """compose's health check gives up after 10 s: a hung relay must make /readyz say so, not hang."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        settings.SMTP_URL = f"smtp://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        response = client.get("/readyz")
        waited = time.monotonic() - started
    assert response.status_code == 503 and response.json()["checks"]["relay"].startswith("failed: ")
    assert waited < 10


def metric(text: str, name: str) -> float:
    return float(next(line for line in text.splitlines() if line.startswith(name + " ")).split()[-1])


def test_metrics_show_the_queues_outcomes_and_request_latency(client, alice, relay):
    mailbox = make_mailbox(alice.account, "news@example.test")
    sender = key_client(alice, ["send"])
    for n in range(3):
        assert sender.post("/mail/send", {"from_email": mailbox.address, "to": [f"r{n}@elsewhere.test"], "subject": "Hi",
                                          "body_text": "Hello"}, format="json").status_code == 200
    OutboundMessage.objects.update(status=OutboundMessage.Status.QUEUED, due_at=timezone.now() - timedelta(minutes=2))
    old = OutboundMessage.objects.create(account=alice.account, mailbox=mailbox, payload={},
                                         status=OutboundMessage.Status.FAILED, due_at=timezone.now())
    OutboundMessage.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=2))

    text = client.get("/metrics").content.decode()

    assert metric(text, 'mailwell_queue_due{queue="sends"}') == 3
    assert 115 <= metric(text, 'mailwell_queue_oldest_due_seconds{queue="sends"}') < 300
    assert metric(text, 'mailwell_queue_due{queue="webhook_deliveries"}') == 0
    assert metric(text, 'mailwell_recent_outcomes{kind="sends",state="queued"}') == 3
    assert 'state="failed"' not in text  # the failed send was made two hours ago: outside the window
    # by URL pattern, never by path (an id in a path would make a series per object)
    assert metric(text, 'mailwell_http_request_duration_seconds_count{method="POST",route="mail/send",'
                        'status="200"}') >= 3


def test_metrics_are_only_for_the_operators_network_or_token(client, settings):
    settings.METRICS_TOKEN = "scrape-token-1"
    elsewhere = {"REMOTE_ADDR": "203.0.113.9"}

    assert client.get("/metrics", **elsewhere).status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong", **elsewhere).status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-1", **elsewhere).status_code == 200
    assert client.get("/metrics").status_code == 200  # loopback, the default METRICS_NETWORKS


def test_every_answer_carries_a_request_id_and_keeps_a_proxys(client):
    made = client.get("/healthz")["X-Request-ID"]
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="caddy-req-0001")["X-Request-ID"]
    replaced = client.get("/healthz", HTTP_X_REQUEST_ID="bad id\r\nX: y")["X-Request-ID"]

    assert len(made) == 32 and kept == "caddy-req-0001" and replaced not in ("", "bad id\r\nX: y")


def test_production_logs_are_json_lines_with_the_request_id(tmp_path):
    probe = ("from django.test import Client\n"
             "Client().get('/no-such-page', secure=True, HTTP_HOST='mail.example.com', HTTP_X_REQUEST_ID='req-12345678')\n")
    result = django_probe(probe, {**PRODUCTION, "DATA_DIR": str(tmp_path)})

    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    not_found = next(line for line in lines if line["logger"] == "django.request")
    assert not_found["level"] == "WARNING" and "Not Found: /no-such-page" in not_found["message"]
    assert not_found["request_id"] == "req-12345678" and "timestamp" in not_found
