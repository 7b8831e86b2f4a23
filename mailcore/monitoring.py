"""The numbers an operator watches, read from the tables the jobs work from (so every web process
answers the same, whichever process did the work): work that is due and how long the oldest has
waited, and how the last hour's sends and webhook deliveries ended."""
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Min
from django.utils import timezone

from mailcore.events.models import WebhookDelivery
from mailcore.hooks import Hook
from mailcore.outbound.models import OutboundMessage


@dataclass(frozen=True)
class Queue:
    name: str
    due: int
    oldest_seconds: float  # how long the oldest due item has waited past its time; 0 when none


# Feature apps' own queues (campaign steps): functions called with now=, each returning a Queue.
feature_queues = Hook("feature_queues")


def queue_of(name: str, rows, field: str, now: datetime) -> Queue:
    """The due rows of a queue: how many, and how long the oldest has waited past `field`."""
    found = rows.aggregate(due=Count("pk"), oldest=Min(field))
    oldest = (now - found["oldest"]).total_seconds() if found["oldest"] else 0.0
    return Queue(name, found["due"], max(oldest, 0.0))


def queues(now: datetime | None = None) -> list[Queue]:
    now = now or timezone.now()
    sends = OutboundMessage.objects.filter(status__in=[OutboundMessage.Status.QUEUED, OutboundMessage.Status.SENDING,
                                                       OutboundMessage.Status.SCHEDULED], due_at__lte=now)
    deliveries = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
    return [queue_of("sends", sends, "due_at", now), queue_of("webhook_deliveries", deliveries, "next_attempt_at", now),
            *feature_queues(now=now)]


# Outcomes count the rows made this recently: a scrape reads an hour of rows through the
# created_at index, never the whole history.
OUTCOME_WINDOW = timedelta(hours=1)


def _by_state(rows) -> dict[str, int]:
    return dict(rows.values_list("status").annotate(n=Count("pk")).order_by())


def outcomes(now: datetime | None = None) -> dict[str, dict[str, int]]:
    """How many of the sends and webhook deliveries made in the last OUTCOME_WINDOW are in each
    state (queued, sent, failed, delivered, dead...)."""
    since = (now or timezone.now()) - OUTCOME_WINDOW
    return {"sends": _by_state(OutboundMessage.objects.filter(created_at__gte=since)),
            "webhook_deliveries": _by_state(WebhookDelivery.objects.filter(created_at__gte=since))}
