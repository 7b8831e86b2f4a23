"""Delivering events to webhook endpoints (the rows events.emit wrote): signing, the HTTP attempt, the retry schedule.

Deliveries are rows. A run claims due rows in batches with a conditional UPDATE (rows another
worker is claiming at that moment are skipped), so a delivery in flight elsewhere is never sent
twice. Threads only post: each endpoint's deliveries one after the other over kept-alive
connections, so a slow endpoint holds up only itself. The run's own thread writes the outcomes
back in bulk as they come in and keeps claiming while work is in flight. A crashed worker's claim
expires and the row is picked up again.
"""
import hashlib
import hmac
import json
import logging
import queue
import ssl
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Mod
from django.utils import timezone

from mailcore.events.models import Event, WebhookDelivery, WebhookEndpoint
from mailcore.fieldcrypt import decrypt
from mailcore.webhooks.safety import (Destination, UnresolvableDestination, UnsafeDestination, lookup,
                                      resolve_destination)
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4), timedelta(minutes=8)]
MAX_ATTEMPTS = 5
RESPONSE_BODY_CAP = 4096
CLAIM_SECONDS = 60
USER_AGENT = "Mailwell-Webhooks/1"
RESOLVE_SECONDS = 1.0  # how long a run uses a host's DNS answer before asking again
RUN_SECONDS = 30  # a run takes new work this long, then finishes what it started
POLL_SECONDS = 1.0  # how often a run with work in flight looks for deliveries that fell due since
RECORD_EVERY_SECONDS = 0.05  # outcomes that come in together are written in one statement
ENDPOINT_BACKLOG = 10  # an endpoint with this many deliveries waiting gets none in the next claim
RECORDED_FIELDS = ["status", "attempts", "response_status", "response_body", "last_error", "claimed_until",
                   "delivered_at", "next_attempt_at"]


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


class Connections:
    """Kept-alive HTTPS clients of one run, one per thread and (host, checked address, port): a
    connection is reused only for the address that passed the checks and the host name its
    certificate was verified for, and threads never wait on each other's connection pool.
    Host names are resolved again once their answer is RESOLVE_SECONDS old, not for every attempt
    (a DNS query can cost more than the POST); each attempt still checks the address it uses."""

    def __init__(self):
        self._mine = threading.local()
        self._clients: list[httpx.Client] = []
        self._answers: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._lock = threading.Lock()

    def resolve(self, hostname: str, port: int) -> list[str]:
        answer = self._answers.get((hostname, port))
        if answer is None or time.monotonic() - answer[0] > RESOLVE_SECONDS:
            answer = self._answers[(hostname, port)] = (time.monotonic(), lookup(hostname, port))
        return answer[1]

    def client(self, destination: Destination) -> httpx.Client:
        mine = self._mine.__dict__.setdefault("clients", {})
        if destination not in mine:
            mine[destination] = httpx.Client(verify=_ssl_context(settings.WEBHOOK_CA_BUNDLE),
                                             timeout=settings.WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False)
            with self._lock:
                self._clients.append(mine[destination])
        return mine[destination]

    def close(self) -> None:
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients.clear()

    def __enter__(self) -> "Connections":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def post_signed(endpoint: WebhookEndpoint, body: str, delivery_id: int | None = None, *,
                connections: Connections | None = None) -> AttemptResult:
    """POST to the checked address of the endpoint's host; no redirects; a capped read.

    The address is checked at every attempt; `connections` lets attempts to the same checked
    address share a kept-alive connection and a recent DNS answer. `X-Service-Delivery` names the
    delivery (the same on every retry of it), so a receiver can drop a repeat of one it already
    processed: delivery is at least once.
    """
    if connections is None:
        with Connections() as own:
            return post_signed(endpoint, body, delivery_id, connections=own)
    try:
        destination = resolve_destination(endpoint.url, endpoint.allowed_ips, connections.resolve)
    except UnsafeDestination as exc:
        return AttemptResult(False, None, "", str(exc), unsafe=True)
    except UnresolvableDestination as exc:
        return AttemptResult(False, None, "", str(exc))
    return _post(connections.client(destination), destination, endpoint, body, delivery_id)


def _post(client: httpx.Client, destination: Destination, endpoint: WebhookEndpoint, body: str,
          delivery_id: int | None) -> AttemptResult:
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


def _outcome_onto(delivery: WebhookDelivery, result: AttemptResult, at: datetime, *,
                  schedule_retries: bool = True) -> None:
    """Count the attempt and set what follows from its result, as of `at`: delivered, retried later, failed or dead."""
    delivery.attempts += 1
    delivery.response_status = result.status
    delivery.response_body = result.body
    delivery.last_error = result.error
    delivery.claimed_until = None
    if result.ok:
        delivery.status, delivery.delivered_at = WebhookDelivery.Status.DELIVERED, at
        delivery.next_attempt_at = None
    elif result.unsafe:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
    elif schedule_retries and delivery.attempts < MAX_ATTEMPTS:
        delivery.next_attempt_at = at + RETRY_DELAYS[delivery.attempts - 1]
    else:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.DEAD, None


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
    _outcome_onto(delivery, result, now, schedule_retries=schedule_retries)
    delivery.save()
    return delivery


# --- a run: batches claimed, per-endpoint queues, outcomes recorded in bulk ---------------------


def _due(now) -> Q:
    return Q(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))


def _claim_due(size: int, skip_endpoints: list[int], part: tuple[int, int] = (0, 1)) -> list[WebhookDelivery]:
    """Up to `size` due deliveries with their endpoint and event, claimed for CLAIM_SECONDS in one
    transaction; rows another worker is claiming at the same moment are skipped, not waited for.
    With `part` (index, count) only the endpoints whose id falls in that share."""
    now = timezone.now()
    due = WebhookDelivery.objects.filter(_due(now))
    if part[1] > 1:
        due = due.alias(share=Mod(F("endpoint_id"), part[1])).filter(share=part[0])
    if skip_endpoints:
        due = due.exclude(endpoint_id__in=skip_endpoints)
    with transaction.atomic():
        rows = list(due.order_by("next_attempt_at", "id").select_related("endpoint", "event")
                    .select_for_update(skip_locked=True, of=("self",))[:size])
        if rows:
            WebhookDelivery.objects.filter(pk__in=[row.pk for row in rows]).update(
                claimed_until=now + timedelta(seconds=CLAIM_SECONDS))
    return rows


def _postpone(deliveries: list[WebhookDelivery]) -> None:
    """Paused endpoints' deliveries wait for the resume, counting no attempt."""
    WebhookDelivery.objects.filter(pk__in=[delivery.pk for delivery in deliveries]).update(
        next_attempt_at=timezone.now() + RETRY_DELAYS[0], claimed_until=None)


@dataclass(frozen=True)
class _Claimed:
    delivery: WebhookDelivery
    start_by: float  # time.monotonic(): an attempt started later could outlast the claim


@dataclass(frozen=True)
class _Outcome:
    delivery: WebhookDelivery
    result: AttemptResult | None = None  # None: no attempt was made
    give_back: bool = False  # not attempted in time: end the claim so that the next run takes it


class _Run:
    """One webhooks_deliver_due(): the calling thread claims and records, a thread pool posts."""

    def __init__(self, limit: int, part: tuple[int, int]):
        self.limit, self.part = limit, part
        self.claimed = 0
        self.in_flight = 0  # claimed and not recorded yet
        self.connections = Connections()
        self.pool = ThreadPoolExecutor(max_workers=max(1, settings.WEBHOOK_CONCURRENCY),
                                       thread_name_prefix="webhook-delivery")
        self.lock = threading.Lock()
        self.waiting: dict[int, deque[_Claimed]] = {}  # endpoint id -> not started yet, while a thread serves it
        self.outcomes: queue.SimpleQueue[_Outcome] = queue.SimpleQueue()

    def deliver(self) -> int:
        try:
            self._loop()
        finally:
            self.pool.shutdown(wait=not self.in_flight, cancel_futures=True)
            self.connections.close()
        return self.claimed

    def _loop(self) -> None:
        """Claim again when half the batch is done (or every POLL_SECONDS), until nothing is due
        or in flight; after RUN_SECONDS hand back what has not started and finish the rest."""
        take_until = time.monotonic() + RUN_SECONDS
        more = self._claim()
        look_at = time.monotonic() + POLL_SECONDS
        while self.in_flight or more:
            now = time.monotonic()
            if now >= take_until:
                more = False
                self._record(self._not_started())
            elif (more and self.in_flight <= self.limit // 2) or now >= look_at:
                more = self._claim()
                look_at = time.monotonic() + POLL_SECONDS
            if self.in_flight:
                self._record(self._collect(min(look_at, take_until) if now < take_until else now + POLL_SECONDS))

    def _claim(self) -> bool:
        """Claim up to the batch's free room; True when it was filled (more are probably due)."""
        size = self.limit - self.in_flight
        if size <= 0:
            return True
        with self.lock:
            backlogged = [key for key, waiting in self.waiting.items() if len(waiting) >= ENDPOINT_BACKLOG]
        start_by = time.monotonic() + CLAIM_SECONDS - 3 * settings.WEBHOOK_TIMEOUT_SECONDS  # connect, send, answer
        rows = _claim_due(size, backlogged, self.part)
        paused = [row for row in rows if not row.endpoint.is_active]
        if paused:
            _postpone(paused)
        self.claimed += len(rows)
        self._enqueue([_Claimed(row, start_by) for row in rows if row.endpoint.is_active])
        return len(rows) == size

    def _enqueue(self, claimed: list[_Claimed]) -> None:
        self.in_flight += len(claimed)
        with self.lock:
            for item in claimed:
                key = item.delivery.endpoint_id
                if key not in self.waiting:
                    self.waiting[key] = deque()
                    self.pool.submit(self._serve, key)
                self.waiting[key].append(item)

    def _serve(self, endpoint_id: int) -> None:
        """In a pool thread: one endpoint's deliveries one after the other, until none is waiting."""
        while item := self._next(endpoint_id):
            self.outcomes.put(self._attempt(item))

    def _next(self, endpoint_id: int) -> _Claimed | None:
        with self.lock:
            waiting = self.waiting[endpoint_id]
            if waiting:
                return waiting.popleft()
            del self.waiting[endpoint_id]
            return None

    def _attempt(self, item: _Claimed) -> _Outcome:
        delivery = item.delivery
        if time.monotonic() > item.start_by:
            return _Outcome(delivery, give_back=True)
        try:
            result = post_signed(delivery.endpoint, envelope_body(delivery.event, delivery.endpoint), delivery.pk,
                                 connections=self.connections)
        except Exception:
            log.exception("webhook delivery %s failed unexpectedly", delivery.pk)
            return _Outcome(delivery)  # its claim runs out and a later run tries again
        return _Outcome(delivery, result)

    def _not_started(self) -> list[_Outcome]:
        with self.lock:
            items = [item for waiting in self.waiting.values() for item in waiting]
            for waiting in self.waiting.values():
                waiting.clear()
        return [_Outcome(item.delivery, give_back=True) for item in items]

    def _collect(self, until: float) -> list[_Outcome]:
        """The outcomes that came in: the first awaited until `until`, then those within RECORD_EVERY_SECONDS."""
        try:
            got = [self.outcomes.get(timeout=max(0.0, until - time.monotonic()))]
        except queue.Empty:
            return []
        gather_until = time.monotonic() + RECORD_EVERY_SECONDS
        while len(got) < self.in_flight:
            try:
                got.append(self.outcomes.get(timeout=max(0.0, gather_until - time.monotonic())))
            except queue.Empty:
                break
        return got

    def _record(self, outcomes: list[_Outcome]) -> None:
        """One UPDATE per distinct outcome (most of a batch shares one: delivered, 200, the same
        answer), timed at the recording: a bulk_update's CASE per row and field costs more than the POST."""
        if not outcomes:
            return
        recorded_at = timezone.now()
        alike: dict[tuple, list[int]] = {}
        for outcome in outcomes:
            if outcome.result is not None:
                _outcome_onto(outcome.delivery, outcome.result, recorded_at)
                values = tuple(getattr(outcome.delivery, field) for field in RECORDED_FIELDS)
                alike.setdefault(values, []).append(outcome.delivery.pk)
        given_back = [outcome.delivery.pk for outcome in outcomes if outcome.give_back]
        with transaction.atomic():
            for values, ids in alike.items():
                WebhookDelivery.objects.filter(pk__in=ids).update(**dict(zip(RECORDED_FIELDS, values)))
            if given_back:  # only while the claim is still ours
                WebhookDelivery.objects.filter(pk__in=given_back, claimed_until__gt=recorded_at).update(
                    claimed_until=None)
        self.in_flight -= len(outcomes)


def webhooks_deliver_due(*, limit: int = 200, part: tuple[int, int] = (0, 1)) -> int:
    """Attempt every due delivery this worker can claim, at most `limit` in flight; returns how many
    it claimed. With `part` (index, count), only that share of the endpoints (see mailcore.sweep):
    each endpoint's deliveries stay with one run, one at a time and in order."""
    return _Run(limit, part).deliver()
