"""Writes of calendars, events and tasks. Every change of an event or task, by any path, goes through
`_store` (or a delete), which lifts the columns out of the iCalendar text, refreshes its ETag and range,
and logs the change for sync clients, in one transaction; events written here (REST, webmail) invite
their attendees. A mailbox's default calendar is made on first use; more are made, renamed, coloured
and deleted here for CalDAV, REST and the webmail alike."""
import hashlib
import secrets
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import transaction

from mailcore.accounts.models import Account
from calendars import ical, invitations
from calendars.models import COMPONENTS, Calendar, CalendarEvent
from mailcore.changelog import MAX_COLLECTIONS, change_record, collection_first_use, etag_of, slug_valid
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


class ComponentUnsupported(EventInvalid):
    """The calendar does not hold this kind of component (CalDAV's supported-calendar-component)."""


class CalendarTaken(DomainError):
    code = ErrorCode.CONFLICT


class CalendarRefused(DomainError):
    """Past the number of calendars, or the default calendar asked to go."""
    code = ErrorCode.FORBIDDEN


DEFAULT_SLUG = "calendar"


def calendar_for(*, account: Account, mailbox: Mailbox | None = None) -> Calendar:
    """The account's own default calendar (no mailbox) or the mailbox's, made on first use."""
    if mailbox is not None and mailbox.account_id != account.pk:
        raise ValueError("mailbox of another account")
    return collection_first_use(Calendar, account=account, mailbox=mailbox, is_default=True,
                                defaults={"slug": DEFAULT_SLUG})


def _color(value: str) -> str:
    value = value.strip().lower()
    if len(value) not in (7, 9) or not value.startswith("#") or any(c not in "0123456789abcdef" for c in value[1:]):
        raise EventInvalid("A colour is #rrggbb.")
    return value[:7]


@transaction.atomic
def calendar_create(*, account: Account, mailbox: Mailbox | None = None, name: str, color: str = "#2563eb",
                    slug: str = "", components: list[str] | tuple = COMPONENTS, timezone: str = "") -> Calendar:
    """Another calendar of the mailbox (or account). `slug` is its URL segment (a sync client's
    MKCALENDAR names it; else one is made from a random token); `components` what it may hold."""
    if mailbox is not None and mailbox.account_id != account.pk:
        raise ValueError("mailbox of another account")
    calendar_for(account=account, mailbox=mailbox)  # the default first, so it keeps its place
    name = name.strip()
    if not name:
        raise EventInvalid("A calendar needs a name.")
    components = [component.upper() for component in components]
    if not components or any(component not in COMPONENTS for component in components):
        raise ComponentUnsupported(f"A calendar holds events (VEVENT), tasks (VTODO) or both; not {components}.")
    slug = slug or secrets.token_hex(8)
    if not slug_valid(slug):
        raise EventInvalid("Not a usable collection name.")
    siblings = Calendar.objects.filter(account=account, mailbox=mailbox)
    if siblings.filter(slug=slug).exists():
        raise CalendarTaken("There is a calendar at that address already.")
    if siblings.count() >= MAX_COLLECTIONS:
        raise CalendarRefused(f"A mailbox may have at most {MAX_COLLECTIONS} calendars.")
    calendar = Calendar(account=account, mailbox=mailbox, slug=slug, name=name[:100], color=_color(color),
                        components=",".join(dict.fromkeys(components)))
    if timezone:
        calendar_update(calendar=calendar, timezone=timezone)  # validates and saves
    calendar.save()
    return calendar


@transaction.atomic
def calendar_delete(*, calendar: Calendar) -> None:
    """The calendar and everything in it go (no cancellations: as when a client deletes it). The
    default calendar stays: its address is the one every client was set up with."""
    if calendar.is_default:
        raise CalendarRefused("The default calendar cannot be deleted; delete its events instead.")
    calendar.delete()


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
    if event.component == CalendarEvent.Component.TASK:
        return _store_task(event, text)
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


def _store_task(task: CalendarEvent, text: str) -> CalendarEvent:
    try:
        fields = ical.task_fields_of(ical.parse_task(text))
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    task.ical, task.uid, task.title, task.description = text, fields.uid, fields.title, fields.description
    task.start, task.end, task.range_end = fields.start, None, None
    task.due, task.all_day, task.completed_at = fields.due, fields.due_date_only, fields.completed_at
    task.status, task.priority, task.recurrence = fields.status, fields.priority, fields.recurrence
    task.color, task.sequence, task.timezone, task.location = fields.color, fields.sequence, "", ""
    task.organizer, task.attendees = "", []
    task.etag = etag_of(text)
    task.save()
    change_record(task.calendar, href=task.href)
    return task


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
    if notify and not event.is_task:
        invitations.event_cancelled(event)
    event.delete()
    change_record(calendar, href=href, deleted=True)


@transaction.atomic
def event_put(*, calendar: Calendar, href: str, text: str, if_match: str | None = None,
              if_none_match: bool = False) -> tuple[CalendarEvent, bool]:
    """Store a calendar object a client sent (CalDAV PUT) as resource `href`, kept as sent: an event
    or a task, as the calendar holds. Returns it and whether it was created. Sync clients send their
    own invitations."""
    try:
        component = ical.component_of(text)
        if component == CalendarEvent.Component.TASK:
            uid = str(ical.task_master(ical.parse_task(text))["UID"])
        elif component == CalendarEvent.Component.EVENT:
            uid = str(ical.master(ical.parse(text))["UID"])
        else:
            raise ComponentUnsupported(f"This server keeps events and tasks, not {component}.")
    except ical.ICalError as exc:
        raise EventInvalid(str(exc)) from exc
    if not calendar.holds(component):
        raise ComponentUnsupported(f"This calendar holds {' and '.join(calendar.component_set)} only.")
    existing = CalendarEvent.objects.select_for_update().filter(calendar=calendar, href=href).first()
    if existing is not None and existing.component != component:
        raise ComponentUnsupported("A resource keeps its component type; delete it first.")
    if if_none_match and existing is not None:
        raise EventConflict("The resource exists already.")
    if if_match is not None and (existing is None or existing.etag != if_match):
        raise EventConflict("The resource changed since you read it.")
    if CalendarEvent.objects.filter(calendar=calendar, uid=uid).exclude(href=href).exists():
        raise EventConflict("Another event in this calendar has that UID.")
    return _store(existing or CalendarEvent(calendar=calendar, href=href, component=component), text), \
        existing is None


@transaction.atomic
def event_move(*, event: CalendarEvent, calendar: Calendar, href: str | None = None,
               overwrite: bool = True) -> tuple[CalendarEvent, bool]:
    """Move an event or task to another calendar of the same owner (or rename it in its own),
    kept as it is: a deletion in the one, a new resource in the other, for sync clients. Returns it
    and whether the destination was new. `overwrite=False` refuses a taken destination."""
    if calendar.account_id != event.calendar.account_id or calendar.mailbox_id != event.calendar.mailbox_id:
        raise ValueError("calendar of another owner")
    href = href or event.href
    source, old_href = event.calendar, event.href
    if source.pk == calendar.pk and old_href == href:
        return event, False
    if not calendar.holds(event.component):
        raise ComponentUnsupported(f"That calendar holds {' and '.join(calendar.component_set)} only.")
    taken = CalendarEvent.objects.select_for_update().filter(calendar=calendar, href=href).first()
    if taken is not None and not overwrite:
        raise EventConflict("There is a resource at the destination already.")
    if CalendarEvent.objects.filter(calendar=calendar, uid=event.uid).exclude(pk=event.pk).exclude(
            pk=taken.pk if taken else None).exists():
        raise EventConflict("Another event in that calendar has this UID.")
    if taken is not None:
        taken.delete()
    event.calendar, event.href = calendar, href
    event.save(update_fields=["calendar", "href", "updated_at"])
    change_record(source, href=old_href, deleted=True)
    change_record(calendar, href=href)
    return event, taken is None


@transaction.atomic
def task_create(*, calendar: Calendar, title: str, description: str = "", due: datetime | None = None,
                due_date_only: bool = False, priority: int = 0, completed: bool = False) -> CalendarEvent:
    if not calendar.holds(CalendarEvent.Component.TASK):
        raise ComponentUnsupported("That calendar holds events only.")
    fields = _task_check(ical.TaskFields(
        uid=ical.new_uid(), title=title.strip(), description=description, due=due, due_date_only=due_date_only,
        priority=priority, status="COMPLETED" if completed else "NEEDS-ACTION"))
    task = CalendarEvent(calendar=calendar, component=CalendarEvent.Component.TASK,
                         href=f"{fields.uid.split('@')[0]}.ics")
    return _store(task, ical.build_task(fields))


TASK_FIELDS = ("title", "description", "due", "due_date_only", "priority", "completed")


def _task_check(fields: ical.TaskFields) -> ical.TaskFields:
    if not fields.title.strip():
        raise EventInvalid("A task needs a title.")
    if not 0 <= fields.priority <= 9:
        raise EventInvalid("A priority is 0 (none) or 1 (highest) to 9 (lowest).")
    if fields.due is not None and fields.due_date_only:
        fields.due = datetime.combine(ical.as_date(fields.due), datetime.min.time(), tzinfo=ical.UTC)
    return fields


@transaction.atomic
def task_update(*, task: CalendarEvent, **changes) -> CalendarEvent:
    """Change the named fields of a task (the rest of its iCalendar data is kept); `completed` sets
    or clears COMPLETED and STATUS."""
    unknown = set(changes) - set(TASK_FIELDS)
    if unknown:
        raise TypeError(f"unknown task fields {sorted(unknown)}")
    fields = ical.task_fields_of(ical.parse_task(task.ical))
    completed = changes.pop("completed", None)
    for name, value in changes.items():
        setattr(fields, name, value)
    if completed is True and fields.status != "COMPLETED":
        fields.status, fields.completed_at = "COMPLETED", None
    elif completed is False and fields.status == "COMPLETED":
        fields.status, fields.completed_at = "NEEDS-ACTION", None
    fields.sequence += 1
    return _store(task, ical.build_task(_task_check(fields), base=task.ical))


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
    """Add every event of an .ics file at once (small files; larger ones go through imports);
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
        calendar.color = _color(color)
    if timezone is not None:
        try:
            ical.zone(timezone)
        except ical.ICalError as exc:
            raise EventInvalid(str(exc)) from exc
        calendar.timezone = timezone
    if calendar.pk:
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


def mailbox_feeds_revoke(*, mailbox: Mailbox) -> None:
    """The mailbox's holder is forgotten (mailcore.holders): its calendars' feed links stop working."""
    Calendar.objects.filter(mailbox=mailbox).update(feed_token_digest=None)


def calendar_by_feed_token(token: str) -> Calendar:
    """The calendar whose feed this token opens (a lookup by digest: the token is never stored)."""
    if not token or len(token) > 100:
        raise Calendar.DoesNotExist
    return Calendar.objects.select_related("mailbox").get(feed_token_digest=_digest(token))
