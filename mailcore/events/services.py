"""The one way to raise an event."""
from django.db import transaction

from mailcore.accounts.models import Account
from mailcore.events.catalog import EVENTS
from mailcore.events.models import Event


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
    from mailcore.webhooks.delivery import deliveries_fan_out  # webhooks build on events, not the reverse

    with transaction.atomic():
        event = Event.objects.create(account=account, name=name, data=payload, sandbox=sandbox)
        deliveries_fan_out(event)
        return event
