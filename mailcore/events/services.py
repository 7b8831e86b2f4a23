"""The one way to raise an event."""
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
