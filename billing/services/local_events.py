"""Delivering the local provider's recorded events (`LocalEvent`) to the same webhook intake as
Stripe's and Paystack's: right after the commit that recorded one (`local_event_deliver`, handed to
the provider by BillingConfig.ready()), and by the `deliver-local-events` job for any left over (a
process that died in between, a failed attempt).

An event is claimed by locking its row (a row another worker holds is skipped, not waited for) and
marked delivered in the transaction that applies it: a worker killed at any moment leaves it either
applied and delivered or neither, and the intake's unique (provider, event id) record makes a
second delivery change nothing all the same (SQLite takes no row locks).
"""
import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from billing.models import LocalEvent
from billing.providers import local
from billing.services.webhooks import webhook_receive

log = logging.getLogger(__name__)

FIRST_RETRY = timedelta(minutes=1)  # then doubled each time, up to LAST_RETRY
LAST_RETRY = timedelta(hours=1)
GIVE_UP_AFTER = timedelta(days=3)  # as Stripe does; billing_reconcile settles a checkout never confirmed
BATCH = 100


def local_event_deliver(*, event_id: int) -> bool:
    """Post one recorded event to the intake, if it still waits and no other worker holds it;
    returns whether this call delivered it. A failure is logged and the event tried again later."""
    try:
        with transaction.atomic():
            event = (LocalEvent.objects.select_for_update(skip_locked=True)
                     .filter(pk=event_id, delivered_at__isnull=True).first())
            if event is None:
                return False
            body, headers = local.event_signed(event)
            webhook_receive(local.NAME, body, headers)
            event.delivered_at, event.next_attempt_at = timezone.now(), None
            event.save(update_fields=["delivered_at", "next_attempt_at"])
    except Exception as exc:
        log.exception("local provider event %s: delivery failed", event_id)
        _failed(event_id, exc)
        return False
    return True


def _failed(event_id: int, exc: Exception) -> None:
    """Count the attempt and set the next one (or none, once GIVE_UP_AFTER has passed)."""
    event = LocalEvent.objects.filter(pk=event_id, delivered_at__isnull=True).first()
    if event is None:
        return
    now = timezone.now()
    event.attempts += 1
    event.last_error = f"{exc.__class__.__name__}: {exc}"[:500]
    retry_at = now + min(FIRST_RETRY * 2 ** min(event.attempts - 1, 16), LAST_RETRY)
    event.next_attempt_at = retry_at if retry_at - event.created_at < GIVE_UP_AFTER else None
    if event.next_attempt_at is None:
        log.error("local provider event %s (%s): given up after %s attempts", event.event_id, event.kind,
                  event.attempts)
    LocalEvent.objects.filter(pk=event_id, delivered_at__isnull=True).update(
        attempts=event.attempts, last_error=event.last_error, next_attempt_at=event.next_attempt_at)


def local_events_deliver_due(*, limit: int = BATCH) -> int:
    """The `deliver-local-events` job: the waiting events whose attempt is due, oldest first;
    returns how many it delivered."""
    due = list(LocalEvent.objects.filter(delivered_at__isnull=True, next_attempt_at__lte=timezone.now())
               .order_by("id").values_list("pk", flat=True)[:limit])
    return sum(local_event_deliver(event_id=pk) for pk in due)
