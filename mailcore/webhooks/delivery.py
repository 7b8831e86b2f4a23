"""Delivering events to webhook endpoints (the rows events.emit wrote): signing, the HTTP attempt, the retry schedule.

Deliveries are rows. A worker claims a due row with a conditional UPDATE (so a delivery in
flight elsewhere is never sent twice), sends it from a thread pool (so a slow endpoint does not
hold up the others), and records the outcome. A crashed worker's claim expires and the row is
picked up again.
"""
import hashlib
import hmac
import json
import logging
import ssl
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import connections
from django.db.models import Q
from django.utils import timezone

from mailcore.events.models import Event, WebhookDelivery, WebhookEndpoint
from mailcore.fieldcrypt import decrypt
from mailcore.webhooks.safety import UnresolvableDestination, UnsafeDestination, resolve_destination
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4), timedelta(minutes=8)]
MAX_ATTEMPTS = 5
RESPONSE_BODY_CAP = 4096
CLAIM_SECONDS = 60
USER_AGENT = "Mailwell-Webhooks/1"


def envelope_body(event: Event, endpoint: WebhookEndpoint) -> str:
    """The compact JSON that is posted and signed."""
    envelope = {"event": event.name, "timestamp": iso(event.created_at), "webhook_id": str(endpoint.pk),
                "data": event.data}
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def signature_header(secret: str, body: str, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


@lru_cache(maxsize=4)
def _ssl_context(ca_bundle: str) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_bundle:
        context.load_verify_locations(cafile=ca_bundle)
    return context


@dataclass(frozen=True)
class AttemptResult:
    ok: bool
    status: int | None
    body: str
    error: str
    unsafe: bool = False


def post_signed(endpoint: WebhookEndpoint, body: str, delivery_id: int | None = None) -> AttemptResult:
    """POST to the checked address of the endpoint's host; no redirects; a capped read.

    `X-Service-Delivery` names the delivery (the same on every retry of it), so a receiver can
    drop a repeat of one it already processed: delivery is at least once.
    """
    try:
        destination = resolve_destination(endpoint.url, endpoint.allowed_ips)
    except UnsafeDestination as exc:
        return AttemptResult(False, None, "", str(exc), unsafe=True)
    except UnresolvableDestination as exc:
        return AttemptResult(False, None, "", str(exc))
    parts = urlsplit(endpoint.url)
    ip = f"[{destination.ip}]" if ":" in destination.ip else destination.ip
    pinned = f"https://{ip}:{destination.port}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")
    host_header = parts.hostname if destination.port == 443 else f"{parts.hostname}:{destination.port}"
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Host": host_header,
        "X-Service-Signature": signature_header(decrypt(endpoint.secret_encrypted), body),
    }
    if delivery_id is not None:
        headers["X-Service-Delivery"] = str(delivery_id)
    try:
        with httpx.Client(verify=_ssl_context(settings.WEBHOOK_CA_BUNDLE), timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
                          follow_redirects=False) as client:
            request = client.build_request("POST", pinned, content=body.encode(), headers=headers,
                                           extensions={"sni_hostname": destination.host})
            response = client.send(request, stream=True)
            try:
                received = b""
                for chunk in response.iter_bytes():
                    received += chunk
                    if len(received) >= RESPONSE_BODY_CAP:
                        break
            finally:
                response.close()
    except httpx.TimeoutException:
        return AttemptResult(False, None, "", f"no answer within {settings.WEBHOOK_TIMEOUT_SECONDS} seconds")
    except httpx.HTTPError as exc:
        return AttemptResult(False, None, "", f"{exc.__class__.__name__}: {exc}"[:500])
    text = received[:RESPONSE_BODY_CAP].decode("utf-8", errors="replace")
    ok = 200 <= response.status_code < 300
    return AttemptResult(ok, response.status_code, text, "" if ok else f"the endpoint answered {response.status_code}")


def _claim(delivery_id: int, now) -> bool:
    due = Q(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
    return bool(WebhookDelivery.objects.filter(due, pk=delivery_id).update(
        claimed_until=now + timedelta(seconds=CLAIM_SECONDS)))


def delivery_attempt(delivery_id: int, *, schedule_retries: bool = True) -> WebhookDelivery:
    """One attempt of a claimed delivery, and its outcome recorded."""
    delivery = WebhookDelivery.objects.select_related("endpoint", "event").get(pk=delivery_id)
    endpoint = delivery.endpoint
    now = timezone.now()
    if not endpoint.is_active:  # paused: keep it for when the endpoint is resumed, count nothing
        delivery.next_attempt_at = now + RETRY_DELAYS[0]
        delivery.claimed_until = None
        delivery.save(update_fields=["next_attempt_at", "claimed_until"])
        return delivery
    result = post_signed(endpoint, envelope_body(delivery.event, endpoint), delivery.pk)
    delivery.attempts += 1
    delivery.response_status = result.status
    delivery.response_body = result.body
    delivery.last_error = result.error
    delivery.claimed_until = None
    if result.ok:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = WebhookDelivery.Status.DELIVERED, now, None
    elif result.unsafe:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
    elif schedule_retries and delivery.attempts < MAX_ATTEMPTS:
        delivery.next_attempt_at = now + RETRY_DELAYS[delivery.attempts - 1]
    else:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.DEAD, None
    delivery.save()
    return delivery


def _attempt_in_thread(delivery_id: int) -> None:
    try:
        delivery_attempt(delivery_id)
    except Exception:
        log.exception("webhook delivery %s failed unexpectedly", delivery_id)
    finally:
        connections.close_all()


def webhooks_deliver_due(*, limit: int = 200) -> int:
    """Attempt every due delivery this worker can claim, in parallel; returns how many."""
    now = timezone.now()
    due = WebhookDelivery.objects.filter(
        Q(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
        & (Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
    ).order_by("next_attempt_at").values_list("pk", flat=True)[:limit]
    claimed = [delivery_id for delivery_id in list(due) if _claim(delivery_id, now)]
    if not claimed:
        return 0
    if settings.WEBHOOK_CONCURRENCY <= 1:
        for delivery_id in claimed:
            delivery_attempt(delivery_id)
        return len(claimed)
    with ThreadPoolExecutor(max_workers=min(settings.WEBHOOK_CONCURRENCY, len(claimed))) as pool:
        list(pool.map(_attempt_in_thread, claimed))
    return len(claimed)
