"""The one way to raise an event (or a batch of them: emit_many)."""
from dataclasses import dataclass

from django.db import transaction

from mailcore.accounts.models import Account
from mailcore.events.catalog import EVENTS
from mailcore.events.models import Event, WebhookDelivery, WebhookEndpoint
from mailcore.jobs import DELIVER_WEBHOOKS, enqueue


def emit(*, account: Account, name: str, data: dict, sandbox: bool = False) -> Event:
    """Record an event durably, inside the caller's transaction (transactional outbox).

    Called within the same atomic block as the change that caused it, the event and one pending
    delivery per subscribed webhook endpoint exist if and only if the change committed. Events
    raised by sandbox sends carry `sandbox: true` in data.
    """
    if name not in EVENTS:
        raise ValueError(f"unknown event {name!r}")
    payload = dict(data)
    if sandbox:
        payload["sandbox"] = True
    # No savepoint inside the caller's transaction (two round trips per event): a failure here
    # fails the caller's whole atomic block, which is what "if and only if" asks for anyway.
    with transaction.atomic(savepoint=False):
        event = Event.objects.create(account=account, name=name, data=payload, sandbox=sandbox)
        deliveries_fan_out(event)
        return event


@dataclass(frozen=True)
class Raised:
    """One event of a batch for emit_many: what emit() takes as keywords."""
    account: Account
    name: str
    data: dict
    sandbox: bool = False


def emit_many(raised: list[Raised]) -> list[Event]:
    """emit() for a batch (a dispatch batch's email.sent events): the same rows in the caller's
    transaction, written with one INSERT of events, one query of endpoints per account and one
    INSERT of deliveries, instead of two or three statements per event."""
    for item in raised:
        if item.name not in EVENTS:
            raise ValueError(f"unknown event {item.name!r}")
    if not raised:
        return []
    with transaction.atomic(savepoint=False):
        events = Event.objects.bulk_create([
            Event(account=item.account, name=item.name, sandbox=item.sandbox,
                  data={**item.data, "sandbox": True} if item.sandbox else dict(item.data))
            for item in raised])
        endpoints_of: dict[int, list[WebhookEndpoint]] = {account_id: [] for account_id in
                                                           {event.account_id for event in events}}
        for endpoint in WebhookEndpoint.objects.filter(account_id__in=list(endpoints_of), is_active=True):
            endpoints_of[endpoint.account_id].append(endpoint)
        rows = [WebhookDelivery(endpoint=endpoint, event=event, next_attempt_at=event.created_at)
                for event in events for endpoint in endpoints_of[event.account_id] if event.name in endpoint.events]
        if rows:
            WebhookDelivery.objects.bulk_create(rows)
            transaction.on_commit(lambda: enqueue(DELIVER_WEBHOOKS))
        return events


def deliveries_fan_out(event: Event) -> list[WebhookDelivery]:
    """One pending delivery per active endpoint of the account subscribed to the event."""
    endpoints = WebhookEndpoint.objects.filter(account_id=event.account_id, is_active=True)
    rows = [
        WebhookDelivery(endpoint=endpoint, event=event, next_attempt_at=event.created_at)
        for endpoint in endpoints
        if event.name in endpoint.events
    ]
    if rows:
        WebhookDelivery.objects.bulk_create(rows)
        transaction.on_commit(lambda: enqueue(DELIVER_WEBHOOKS))
    return rows
