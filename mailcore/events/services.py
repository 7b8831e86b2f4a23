"""The one way to raise an event (or a batch of them: emit_many)."""
import json
from dataclasses import dataclass

from django.db import connection, transaction

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
    return emit_many([Raised(account, name, data, sandbox)])[0]


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
        endpoints_of = _subscriptions({event.account_id for event in events})
        rows = [WebhookDelivery(endpoint_id=endpoint_id, event=event, next_attempt_at=event.created_at)
                for event in events for endpoint_id, names in endpoints_of.get(event.account_id, [])
                if event.name in names]
        if rows:
            WebhookDelivery.objects.bulk_create(rows)
            transaction.on_commit(lambda: enqueue(DELIVER_WEBHOOKS))
        return events


def _subscriptions(account_ids: set[int]) -> dict[int, list[tuple[int, list[str]]]]:
    """Each account's active endpoints as (id, event names): one plain query, as every inbound
    message and dispatch batch asks this (the ORM spent more building it than the database
    answering it, mostly for accounts without endpoints)."""
    table = WebhookEndpoint._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "account_id", "id", "events" FROM "{table}" WHERE "is_active" AND "account_id" IN '
                       f'({", ".join(["%s"] * len(account_ids))})', list(account_ids))
        found: dict[int, list[tuple[int, list[str]]]] = {}
        for account_id, endpoint_id, names in cursor.fetchall():
            names = json.loads(names) if isinstance(names, (str, bytes)) else names  # jsonb may come decoded
            found.setdefault(account_id, []).append((endpoint_id, names))
    return found
