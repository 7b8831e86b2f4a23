"""Writes of calendars and events. Every change of an event, by any path, goes through `_save` /
`_remove`, which re-render the iCalendar text, refresh its ETag and range, and log the change for
sync clients, in one transaction; events written here (REST, webmail) invite their attendees."""
import hashlib
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import transaction

from mailcore.accounts.models import Account
from mailcore.calendars import ical, invitations
from mailcore.calendars.models import Calendar, CalendarEvent
from mailcore.changelog import change_record, collection_first_use, etag_of
from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox

EVENT_FIELDS = ("title", "start", "end", "all_day", "timezone", "description", "location", "color", "recurrence",
                "attendees")
MAX_IMPORT_EVENTS = 5000


class EventInvalid(DomainError):
    code = ErrorCode.INVALID


class EventConflict(DomainError):
    """An If-Match / If-None-Match precondition failed, or the UID is taken (HTTP 412 in DAV)."""
    code = ErrorCode.CONFLICT


def calendar_for(*, account: Account, mailbox: Mailbox | None = None) -> Calendar:
    """The account's own calendar (no mailbox) or the mailbox's, made on first use."""
    if mailbox is not None and mailbox.account_id != account.pk:
        raise ValueError("mailbox of another account")
    return collection_first_use(Calendar, account=account, mailbox=mailbox)


def _attendees(addresses, known: list[dict]) -> list[dict]:
    """Attendee records for these addresses (or records), keeping the reply status already known."""
    status = {item["email"]: item for item in known}
    records = []
    for item in addresses:
        email = (item["email"] if isinstance(item, dict) else item).strip().lower()
        if email and email not in (record["email"] for record in records):
            records.append(status.get(email) or {"email": email, "name": item.get("name", "") if isinstance(item, dict) else "",
                                                  "status": "NEEDS-ACTION"})
    return records


def _check(fields: ical.EventFields) -> ical.EventFields:
    if not fields.title.strip():
        raise EventInvalid("An event needs a title.")
    if fields.end < fields.start:
        raise EventInvalid("The end may not be before the start.")
    try:
        ical.zone(fields.timezone)
        fields.recurrence = ical.rrule_check(fields.recurrence, fields.start)
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    if fields.all_day:  # whole days, the end exclusive and at least a day after the start
        start = ical.as_date(fields.start)
        end = max(ical.as_date(fields.end), start)
        fields.start = datetime.combine(start, datetime.min.time(), tzinfo=fields.start.tzinfo).replace(tzinfo=ical.UTC)
        fields.end = datetime.combine(end, datetime.min.time()).replace(tzinfo=ical.UTC)
        if fields.end <= fields.start:
            fields.end = fields.start + ical.timedelta(days=1)
    return fields


def _fields(event: CalendarEvent) -> ical.EventFields:
    return ical.EventFields(
        uid=event.uid, title=event.title, start=event.start, end=event.end, all_day=event.all_day,
        timezone=event.timezone, description=event.description, location=event.location, color=event.color,
        recurrence=event.recurrence, organizer=event.organizer, attendees=list(event.attendees),
        sequence=event.sequence)


def _store(event: CalendarEvent, text: str) -> CalendarEvent:
    """Lift the columns out of the resource text, save, log the change."""
    try:
        parsed = ical.parse(text)
        fields = ical.fields_of(parsed)
        event.range_end = ical.range_end(text)
        event.is_series = ical.is_series(parsed)
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    event.ical = text
    event.uid = fields.uid
    for name in ("title", "start", "end", "all_day", "timezone", "description", "location", "color", "recurrence",
                 "organizer", "attendees", "sequence"):
        setattr(event, name, getattr(fields, name))
    event.etag = etag_of(text)
    event.save()
    change_record(event.calendar, href=event.href)
    return event


def _organizer(calendar: Calendar) -> str:
    return calendar.mailbox.address if calendar.mailbox_id else ""


@transaction.atomic
def event_create(*, calendar: Calendar, title: str, start: datetime, end: datetime, all_day: bool = False,
                 timezone: str = "", description: str = "", location: str = "", color: str = "",
                 recurrence: str = "", attendees=()) -> CalendarEvent:
    attendee_records = _attendees(attendees, [])
    fields = _check(ical.EventFields(
        uid=ical.new_uid(), title=title.strip(), start=start, end=end, all_day=all_day, timezone=timezone,
        description=description, location=location.strip(), color=color.lower(), recurrence=recurrence,
        organizer=_organizer(calendar) if attendee_records else "", attendees=attendee_records))
    event = _store(CalendarEvent(calendar=calendar, href=f"{fields.uid.split('@')[0]}.ics"), ical.build(fields))
    invitations.event_changed(event, before=None)
    return event


@transaction.atomic
def event_update(*, event: CalendarEvent, occurrence: datetime | None = None, **changes) -> CalendarEvent:
    """Change the event (the whole series), or with `occurrence` (its original start) only that one."""
    unknown = set(changes) - set(EVENT_FIELDS)
    if unknown:
        raise TypeError(f"unknown event fields {sorted(unknown)}")
    before = _fields(event)
    fields = replace(before, attendees=list(before.attendees))
    for name, value in changes.items():
        if name == "attendees":
            value = _attendees(value, before.attendees)
        setattr(fields, name, value)
    if fields.attendees and not fields.organizer:
        fields.organizer = _organizer(event.calendar)
    _check(fields)
    fields.sequence = before.sequence + 1
    if occurrence is not None:
        if not event.recurrence:
            raise EventInvalid("Only an occurrence of a repeating event can be changed on its own.")
        master = replace(before, sequence=fields.sequence)
        text = ical.override(ical.build(master, base=event.ical), occurrence, fields)
    else:
        text = ical.build(fields, base=event.ical)
    event = _store(event, text)
    invitations.event_changed(event, before=before, occurrence=occurrence)
    return event


@transaction.atomic
def event_delete(*, event: CalendarEvent, occurrence: datetime | None = None, notify: bool = True) -> None:
    """Delete the event (and cancel it for its attendees), or with `occurrence` only that one.
    `notify=False` for sync clients, which send their own cancellations (as they send their invitations)."""
    if occurrence is not None:
        if not event.recurrence:
            raise EventInvalid("Only an occurrence of a repeating event can be deleted on its own.")
        before = _fields(event)
        text = ical.build(replace(before, sequence=before.sequence + 1), base=event.ical)
        event = _store(event, ical.exclude(text, occurrence))
        if notify:
            invitations.occurrence_cancelled(event, occurrence=occurrence)
        return
    calendar, href = event.calendar, event.href
    if notify:
        invitations.event_cancelled(event)
    event.delete()
    change_record(calendar, href=href, deleted=True)


@transaction.atomic
def event_put(*, calendar: Calendar, href: str, text: str, if_match: str | None = None,
              if_none_match: bool = False) -> tuple[CalendarEvent, bool]:
    """Store a calendar object a client sent (CalDAV PUT) as resource `href`, kept as sent.
    Returns the event and whether it was created. Sync clients send their own invitations."""
    try:
        parsed = ical.parse(text)
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    uid = str(ical.master(parsed)["UID"])
    existing = CalendarEvent.objects.select_for_update().filter(calendar=calendar, href=href).first()
    if if_none_match and existing is not None:
        raise EventConflict("The resource exists already.")
    if if_match is not None and (existing is None or existing.etag != if_match):
        raise EventConflict("The resource changed since you read it.")
    if CalendarEvent.objects.filter(calendar=calendar, uid=uid).exclude(href=href).exists():
        raise EventConflict("Another event in this calendar has that UID.")
    return _store(existing or CalendarEvent(calendar=calendar, href=href), text), existing is None


@dataclass
class ImportResult:
    created: int = 0
    updated: int = 0
    errors: list[str] = field(default_factory=list)


def events_import_split(*, text: str) -> list[ical.CalendarObjectText]:
    """The calendar objects of an .ics file, checked in one linear pass; EventInvalid (nothing to
    import) for a file that is not iCalendar, nests too deep, holds no event or too many."""
    try:
        objects = ical.split(text, max_events=MAX_IMPORT_EVENTS)
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    if not objects:
        raise EventInvalid("The file holds no events.")
    return objects


@transaction.atomic
def event_import_one(*, calendar: Calendar, obj: ical.CalendarObjectText) -> bool:
    """Store one calendar object of an import file, replacing the event of the same UID (so applying it
    twice leaves one event). True when it made a new event; EventInvalid/EventConflict when it cannot."""
    existing = CalendarEvent.objects.filter(calendar=calendar, uid=obj.uid).first()
    href = existing.href if existing else hashlib.sha256(obj.uid.encode()).hexdigest()[:32] + ".ics"
    event_put(calendar=calendar, href=href, text=obj.text)
    return existing is None


@transaction.atomic
def events_import(*, calendar: Calendar, text: str) -> ImportResult:
    """Add every event of an .ics file at once (small files; larger ones go through mailcore.imports);
    an event whose UID is in the calendar already replaces it."""
    result = ImportResult()
    for number, obj in enumerate(events_import_split(text=text), start=1):
        try:
            created = event_import_one(calendar=calendar, obj=obj)
        except (EventInvalid, EventConflict) as exc:
            result.errors.append(f"Event {number}: {exc.detail}")
            continue
        result.created += created
        result.updated += not created
    return result


@transaction.atomic
def calendar_update(*, calendar: Calendar, name: str | None = None, color: str | None = None,
                    timezone: str | None = None) -> Calendar:
    """Rename or recolour the calendar, or set the zone its owner sees it in."""
    if name is not None:
        if not name.strip():
            raise EventInvalid("A calendar needs a name.")
        calendar.name = name.strip()[:100]
    if color is not None:
        calendar.color = color.lower()
    if timezone is not None:
        try:
            ical.zone(timezone)
        except ical.ICalError as exc:
            raise EventInvalid(str(exc)) from exc
        calendar.timezone = timezone
    calendar.save(update_fields=["name", "color", "timezone"])
    return calendar


def calendar_export(*, calendar: Calendar) -> str:
    """The whole calendar as one .ics file (time zones once, every event with its overrides)."""
    out = ical.icalendar.Calendar()
    out.add("prodid", ical.PRODID)
    out.add("version", "2.0")
    out.add("x-wr-calname", calendar.name)
    zones: set[str] = set()
    for event in calendar.events.order_by("start"):
        for component in ical.icalendar.Calendar.from_ical(event.ical).subcomponents:
            if component.name == "VTIMEZONE":
                if str(component["TZID"]) in zones:
                    continue
                zones.add(str(component["TZID"]))
            out.add_component(component)
    return out.to_ical().decode()


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def feed_token_create(*, calendar: Calendar) -> str:
    """A new secret for the read-only .ics feed (any earlier one stops working); shown once."""
    token = secrets.token_urlsafe(32)
    calendar.feed_token_digest = _digest(token)
    calendar.save(update_fields=["feed_token_digest"])
    return token


def feed_revoke(*, calendar: Calendar) -> None:
    calendar.feed_token_digest = None
    calendar.save(update_fields=["feed_token_digest"])


def calendar_by_feed_token(token: str) -> Calendar:
    """The calendar whose feed this token opens (a lookup by digest: the token is never stored)."""
    if not token or len(token) > 100:
        raise Calendar.DoesNotExist
    return Calendar.objects.select_related("mailbox").get(feed_token_digest=_digest(token))
