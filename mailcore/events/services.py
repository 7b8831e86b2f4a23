"""The one way to raise an event (or a batch of them: emit_many)."""
import json
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

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
        events = _insert_events(raised)
        endpoints_of = _subscriptions({event.account_id for event in events})
        rows = [WebhookDelivery(endpoint_id=endpoint_id, event=event, next_attempt_at=event.created_at)
                for event in events for endpoint_id, names in endpoints_of.get(event.account_id, [])
                if event.name in names]
        if rows:
            WebhookDelivery.objects.bulk_create(rows)
            transaction.on_commit(lambda: enqueue(DELIVER_WEBHOOKS))
        return events


def _insert_events(raised: list[Raised]) -> list[Event]:
    """The events in one INSERT written by hand (every inbound message and dispatch batch writes
    some; bulk_create spent more CPU building the statement than the database spent on it)."""
    now, data_field = timezone.now(), Event._meta.get_field("data")
    rows = [(item.account.pk, item.name, {**item.data, "sandbox": True} if item.sandbox else dict(item.data),
             item.sandbox) for item in raised]
    created_at = connection.ops.adapt_datetimefield_value(now)
    values = [value for account_id, name, data, sandbox in rows
              for value in (account_id, name, data_field.get_db_prep_save(data, connection), sandbox, created_at)]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {connection.ops.quote_name(Event._meta.db_table)} "
                       f"(account_id, name, data, sandbox, created_at) VALUES "
                       f"{', '.join(['(%s, %s, %s, %s, %s)'] * len(rows))} RETURNING id", values)
        ids = [row[0] for row in cursor.fetchall()]
    events = []
    for event_id, item, (account_id, name, data, sandbox) in zip(ids, raised, rows, strict=True):
        known = {"id": event_id, "account_id": account_id, "name": name, "data": data, "sandbox": sandbox,
                 "created_at": now}
        event = Event.from_db(connection.alias, _EVENT_FIELDS, [known[field] for field in _EVENT_FIELDS])
        event.account = item.account
        events.append(event)
    return events


_EVENT_FIELDS = [field.attname for field in Event._meta.concrete_fields]


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
