"""iCalendar text in and out (icalendar, recurring-ical-events): build the object resource of an
event made here, lift the master VEVENT's fields out of any a client sends, change only those
fields in a stored resource (alarms, categories and overrides survive), override or drop one
occurrence of a series, and expand a series into the occurrences inside a time range."""
import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import icalendar
import recurring_ical_events
from dateutil import rrule as dateutil_rrule

from mailcore import contentlines

PRODID = "-//Mailwell//Calendar//EN"
MAX_ICAL_BYTES = 1_000_000
MAX_EXPANDED = 2000  # occurrences looked at to find where a bounded series ends
PARTSTATS = ("NEEDS-ACTION", "ACCEPTED", "DECLINED", "TENTATIVE", "DELEGATED")


class ICalError(ValueError):
    pass


@dataclass
class EventFields:
    uid: str = ""
    title: str = ""
    start: datetime | None = None  # aware; for all-day events midnight UTC of the first day
    end: datetime | None = None  # exclusive; for all-day events midnight UTC of the day after the last
    all_day: bool = False
    timezone: str = ""
    description: str = ""
    location: str = ""
    color: str = ""
    recurrence: str = ""
    organizer: str = ""
    attendees: list[dict] = field(default_factory=list)
    sequence: int = 0


def new_uid() -> str:
    return f"{uuid.uuid4()}@mailwell"


def zone(name: str):
    if not name:
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ICalError(f"Unknown time zone {name!r}.") from exc


def rrule_check(rule: str, start: datetime) -> str:
    """The RRULE value normalised, or ICalError: it must parse and produce an occurrence."""
    rule = rule.strip().removeprefix("RRULE:")
    if not rule:
        return ""
    if len(rule) > 255:
        raise ICalError("A recurrence rule may be at most 255 characters.")
    try:
        recur = icalendar.vRecur.from_ical(rule)
        first = dateutil_rrule.rrulestr(recur.to_ical().decode(), dtstart=start).after(start, inc=True)
    except Exception as exc:
        raise ICalError(f"Not a valid RRULE: {rule!r}.") from exc
    if first is None:
        raise ICalError("The rule produces no occurrence from this start.")
    return recur.to_ical().decode()


def _utc(value) -> datetime:
    """A DTSTART/DTEND value as an aware UTC datetime (a date is its midnight UTC; floating is UTC)."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    return datetime.combine(value, time(), tzinfo=UTC)


def _address(value) -> str:
    return str(value).removeprefix("mailto:").removeprefix("MAILTO:").strip().lower()


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _parse_object(text: str, component: str) -> icalendar.Calendar:
    """One calendar object resource: the `component`s of a single UID (the master and its overrides)."""
    if len(text.encode()) > MAX_ICAL_BYTES:
        raise ICalError("An event may be at most 1 MB.")
    try:
        calendar = icalendar.Calendar.from_ical(text)
    except Exception as exc:
        raise ICalError(f"Not iCalendar data: {exc}") from exc
    items = calendar.walk(component)
    if not items:
        raise ICalError(f"The calendar data holds no {component}.")
    uids = {str(item.get("UID", "")) for item in items}
    if len(uids) != 1 or "" in uids:
        raise ICalError(f"A calendar object holds the {component}s of exactly one UID.")
    return calendar


def parse(text: str) -> icalendar.Calendar:
    """One event's calendar object resource: VEVENTs of a single UID (the master and its overrides)."""
    calendar = _parse_object(text, "VEVENT")
    for event in calendar.walk("VEVENT"):
        if "DTSTART" not in event:
            raise ICalError("A VEVENT needs a DTSTART.")
    return calendar


OBJECT_COMPONENTS = ("VEVENT", "VTODO", "VJOURNAL", "VFREEBUSY")


def component_of(text: str) -> str:
    """Which kind of calendar object the text is (VEVENT, VTODO, VJOURNAL...); ICalError when it
    holds none or a mix (a resource is one component type, RFC 4791 4.1)."""
    if len(text.encode()) > MAX_ICAL_BYTES:
        raise ICalError("An event may be at most 1 MB.")
    try:
        calendar = icalendar.Calendar.from_ical(text)
    except Exception as exc:
        raise ICalError(f"Not iCalendar data: {exc}") from exc
    names = {component.name for component in calendar.subcomponents if component.name in OBJECT_COMPONENTS}
    if len(names) != 1:
        raise ICalError("A calendar object holds exactly one kind of component (VEVENT or VTODO).")
    return names.pop()


# VCALENDAR > VEVENT > VALARM, VCALENDAR > VTIMEZONE > STANDARD, and one more for what a client may add.
MAX_NESTING = 4
MAX_FILE_ZONES = 500


@dataclass
class CalendarObjectText:
    """One calendar object cut out of an import file: the VEVENTs of one UID, with the time zones they name."""

    uid: str
    text: str


def split(text: str, *, max_events: int) -> list[CalendarObjectText]:
    """An .ics file (many events, any UIDs) as one calendar object per UID, in one linear pass
    (contentlines): a file nested deeper than MAX_NESTING, or holding more than `max_events`
    VEVENTs, is an ICalError before any event is parsed. An event without a UID gets one."""
    try:
        items = contentlines.items_of(text, container="VCALENDAR", max_depth=MAX_NESTING, limits={
            "VEVENT": (max_events, "events"), "VTIMEZONE": (MAX_FILE_ZONES, "time zones")})
    except contentlines.ContentLinesError as exc:
        raise ICalError(f"Not an iCalendar file: {exc}") from exc
    for item in items:
        if item.name == "VTIMEZONE":
            item.uid = next((contentlines.value_of(line) for line in item.lines
                             if contentlines.name_of(line) == "TZID"), "")
    zones = {item.uid: item for item in items if item.name == "VTIMEZONE" and item.uid}
    by_uid: dict[str, list[contentlines.Item]] = {}
    for item in items:
        if item.name != "VEVENT":
            continue
        if not item.uid:
            item.uid = new_uid()
            item.lines.insert(1, f"UID:{item.uid}")
        by_uid.setdefault(item.uid, []).append(item)
    head = f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:{PRODID}\r\n"
    objects = []
    for uid, events in by_uid.items():
        body = "".join(event.text for event in events)
        named = "".join(zone.text for tzid, zone in zones.items()
                        if f"TZID={tzid}:" in body or f'TZID="{tzid}"' in body or f"TZID={tzid};" in body)
        objects.append(CalendarObjectText(uid=uid, text=head + named + body + "END:VCALENDAR\r\n"))
    return objects


def _empty() -> icalendar.Calendar:
    calendar = icalendar.Calendar()
    calendar.add("prodid", PRODID)
    calendar.add("version", "2.0")
    return calendar


def master(calendar: icalendar.Calendar):
    events = calendar.walk("VEVENT")
    return next((event for event in events if "RECURRENCE-ID" not in event), events[0])


def fields_of(calendar: icalendar.Calendar) -> EventFields:
    event = master(calendar)
    start_value = event["DTSTART"].dt
    all_day = not isinstance(start_value, datetime)
    start = _utc(start_value)
    if "DTEND" in event:
        end = _utc(event["DTEND"].dt)
    elif "DURATION" in event:
        end = start + event["DURATION"].dt
    else:
        end = start + (timedelta(days=1) if all_day else timedelta())
    tz = ""
    if isinstance(start_value, datetime) and start_value.tzinfo is not None:
        key = getattr(start_value.tzinfo, "key", None) or event["DTSTART"].params.get("TZID", "")
        tz = "" if str(key) in ("UTC", "Etc/UTC", "") else str(key)
        try:
            zone(tz)
        except ICalError:
            tz = ""
    rrules = _as_list(event.get("RRULE"))
    attendees = [{"email": _address(item), "name": str(item.params.get("CN", "")),
                  "status": str(item.params.get("PARTSTAT", "NEEDS-ACTION")).upper()}
                 for item in _as_list(event.get("ATTENDEE"))]
    return EventFields(
        uid=str(event["UID"]),
        title=str(event.get("SUMMARY", ""))[:255] or "(no title)",
        start=start, end=max(end, start), all_day=all_day, timezone=tz,
        description=str(event.get("DESCRIPTION", "")),
        location=str(event.get("LOCATION", ""))[:255],
        color=_hex(str(event.get("COLOR", ""))),
        recurrence=rrules[0].to_ical().decode() if rrules else "",
        organizer=_address(event["ORGANIZER"]) if "ORGANIZER" in event else "",
        attendees=[attendee for attendee in attendees if "@" in attendee["email"]],
        sequence=int(event.get("SEQUENCE", 0) or 0),
    )


def _hex(value: str) -> str:
    value = value.strip()
    return value.lower() if len(value) == 7 and value.startswith("#") else ""


def _set(event, name: str, value, **parameters) -> None:
    event.pop(name, None)
    if value not in (None, "", []):
        event.add(name, value, parameters=parameters or None)


def _local(moment: datetime, fields: EventFields):
    """The value to write for a start or end: a date for all-day events, else the time in the event's zone."""
    if fields.all_day:
        return moment.astimezone(UTC).date()
    return moment.astimezone(zone(fields.timezone))


def _write_master(event, fields: EventFields) -> None:
    _set(event, "SUMMARY", fields.title)
    _set(event, "DTSTART", _local(fields.start, fields))
    event.pop("DURATION", None)
    _set(event, "DTEND", _local(fields.end, fields))
    _set(event, "DESCRIPTION", fields.description)
    _set(event, "LOCATION", fields.location)
    _set(event, "COLOR", fields.color)
    _set(event, "RRULE", icalendar.vRecur.from_ical(fields.recurrence) if fields.recurrence else None)
    if fields.organizer:
        _set(event, "ORGANIZER", f"mailto:{fields.organizer}")
    else:
        event.pop("ORGANIZER", None)
    event.pop("ATTENDEE", None)
    for attendee in fields.attendees:
        parameters = {"PARTSTAT": attendee.get("status") or "NEEDS-ACTION", "ROLE": "REQ-PARTICIPANT",
                      "RSVP": "TRUE"}
        if attendee.get("name"):
            parameters["CN"] = attendee["name"]
        event.add("ATTENDEE", f"mailto:{attendee['email']}", parameters=parameters)
    _set(event, "SEQUENCE", fields.sequence)
    _set(event, "DTSTAMP", datetime.now(UTC))
    _set(event, "LAST-MODIFIED", datetime.now(UTC))


def build(fields: EventFields, *, base: str | None = None) -> str:
    """The resource's text: a new one for these fields, or `base` with only the master's fields changed."""
    if base:
        calendar = parse(base)
        event = master(calendar)
    else:
        calendar = _empty()
        event = icalendar.Event()
        event.add("UID", fields.uid)
        event.add("CREATED", datetime.now(UTC))
        calendar.add_component(event)
    _write_master(event, fields)
    calendar.add_missing_timezones()
    return calendar.to_ical().decode()


def _recurrence_key(value) -> datetime:
    return _utc(value.dt if hasattr(value, "dt") else value)


def override(text: str, recurrence_id: datetime, fields: EventFields) -> str:
    """Change one occurrence of a series (the one that started at `recurrence_id`): its own VEVENT."""
    calendar = parse(text)
    main = master(calendar)
    key = _recurrence_key(recurrence_id)
    existing = next((event for event in calendar.walk("VEVENT")
                     if "RECURRENCE-ID" in event and _recurrence_key(event["RECURRENCE-ID"]) == key), None)
    if existing is None:
        existing = icalendar.Event()
        existing.add("UID", main["UID"])
        original = main["DTSTART"].dt
        rid = key.date() if not isinstance(original, datetime) else key.astimezone(
            original.tzinfo if original.tzinfo else UTC)
        existing.add("RECURRENCE-ID", rid)
        calendar.add_component(existing)
    _write_master(existing, replace(fields, recurrence=""))
    calendar.add_missing_timezones()
    return calendar.to_ical().decode()


def exclude(text: str, recurrence_id: datetime) -> str:
    """Drop one occurrence of a series: an EXDATE on the master, its override removed."""
    calendar = parse(text)
    main = master(calendar)
    key = _recurrence_key(recurrence_id)
    calendar.subcomponents = [component for component in calendar.subcomponents
                              if not (component.name == "VEVENT" and "RECURRENCE-ID" in component
                                      and _recurrence_key(component["RECURRENCE-ID"]) == key)]
    original = main["DTSTART"].dt
    value = key.date() if not isinstance(original, datetime) else key.astimezone(original.tzinfo or UTC)
    main.add("EXDATE", value)
    return calendar.to_ical().decode()


@dataclass
class Occurrence:
    uid: str
    title: str
    start: datetime  # UTC
    end: datetime
    all_day: bool
    recurrence_id: datetime | None  # UTC start of the occurrence in the series; None for a single event
    location: str = ""
    description: str = ""
    color: str = ""


def occurrences(text: str, start: datetime, end: datetime) -> list[Occurrence]:
    """Every occurrence that overlaps [start, end)."""
    calendar = parse(text)
    main = master(calendar)
    recurring = "RRULE" in main or "RDATE" in main
    found = []
    for event in recurring_ical_events.of(calendar).between(start, end):
        begin = event["DTSTART"].dt
        all_day = not isinstance(begin, datetime)
        finish = event["DTEND"].dt if "DTEND" in event else begin
        rid = event.get("RECURRENCE-ID")
        found.append(Occurrence(
            uid=str(event["UID"]), title=str(event.get("SUMMARY", "")) or "(no title)",
            start=_utc(begin), end=_utc(finish), all_day=all_day,
            recurrence_id=_recurrence_key(rid) if (recurring and rid is not None) else None,
            location=str(event.get("LOCATION", "")), description=str(event.get("DESCRIPTION", "")),
            color=_hex(str(event.get("COLOR", ""))),
        ))
    return sorted(found, key=lambda occurrence: occurrence.start)


def range_end(text: str) -> datetime | None:
    """The end of the last occurrence, or None for a series without end."""
    calendar = parse(text)
    main = master(calendar)
    fields = fields_of(calendar)
    last = fields.end
    for event in calendar.walk("VEVENT"):
        if "RECURRENCE-ID" in event and "DTEND" in event:
            last = max(last, _utc(event["DTEND"].dt))
    rules = _as_list(main.get("RRULE"))
    if not rules and "RDATE" not in main:
        return last
    if rules and "COUNT" not in rules[0] and "UNTIL" not in rules[0]:
        return None
    series = recurring_ical_events.of(calendar)
    ends = [_utc(event["DTEND"].dt if "DTEND" in event else event["DTSTART"].dt)
            for _, event in zip(range(MAX_EXPANDED), series.all())]
    if len(ends) >= MAX_EXPANDED:
        return None
    return max([last, *ends])


def as_date(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def is_series(calendar: icalendar.Calendar) -> bool:
    """Whether the resource has more than one occurrence to look at (RRULE, RDATE or overrides)."""
    main = master(calendar)
    return ("RRULE" in main or "RDATE" in main
            or any("RECURRENCE-ID" in event for event in calendar.walk("VEVENT")))


def _span(component) -> tuple[datetime, datetime]:
    """An occurrence's start and end in UTC (RFC 4791 9.9: a date without DTEND lasts a day)."""
    begin = component["DTSTART"].dt
    if "DTEND" in component:
        finish = _utc(component["DTEND"].dt)
    elif "DURATION" in component:
        finish = _utc(begin) + component["DURATION"].dt
    else:
        finish = _utc(begin) + (timedelta() if isinstance(begin, datetime) else timedelta(days=1))
    return _utc(begin), finish


def _overlaps(span: tuple[datetime, datetime], start: datetime, end: datetime) -> bool:
    """RFC 4791 9.9: an instant is in [start, end) when it starts there; a span when it overlaps."""
    begin, finish = span
    return begin < end and (finish > start or (begin == finish and begin >= start))


def _instances(calendar: icalendar.Calendar, start: datetime, end: datetime):
    """The occurrences (one component each, as recurring_ical_events makes them) overlapping [start, end)."""
    for component in recurring_ical_events.of(calendar).between(start, end):
        if _overlaps(_span(component), start, end):
            yield component


def _first_overlaps(rule: str, begin: datetime, duration: timedelta, exdates: list[datetime],
                    start: datetime, end: datetime) -> bool | None:
    """Whether an occurrence of RRULE `rule` from `begin` (less `exdates`) overlaps [start, end),
    straight from dateutil's rule; None when dateutil cannot say (then expand fully)."""
    if begin.tzinfo is None:  # dates and floating times are read as UTC, as on write
        start, end = start.astimezone(UTC).replace(tzinfo=None), end.astimezone(UTC).replace(tzinfo=None)
    try:
        rules = dateutil_rrule.rruleset()
        rules.rrule(dateutil_rrule.rrulestr(rule, dtstart=begin))
        for moment in exdates:
            if (moment.tzinfo is None) != (begin.tzinfo is None):
                return None
            rules.exdate(moment)
        first = rules.after(start - duration, inc=False) if duration else rules.after(start, inc=True)
    except (ValueError, TypeError):
        return None
    return first is not None and first < end


def _rule_overlaps(main, start: datetime, end: datetime) -> bool | None:
    """For a master with one RRULE (and any EXDATEs) and nothing else: _first_overlaps from its properties."""
    if "RDATE" in main or "EXRULE" in main or isinstance(main.get("RRULE"), list):
        return None
    begin = main["DTSTART"].dt
    span_start, span_end = _span(main)
    if not isinstance(begin, datetime):
        begin = datetime.combine(begin, time())
    exdates = [value.dt if isinstance(value.dt, datetime) else datetime.combine(value.dt, time())
               for exdates in _as_list(main.get("EXDATE")) for value in exdates.dts]
    return _first_overlaps(main["RRULE"].to_ical().decode(), begin, span_end - span_start, exdates, start, end)


ZONED_START = re.compile(r"^DTSTART;[^:\r\n]*TZID=", re.MULTILINE)
NOT_A_PLAIN_RULE = ("EXDATE", "RDATE", "EXRULE", "RECURRENCE-ID")


def plain_rule_overlaps(*, text: str, rule: str, first_start: datetime, first_end: datetime, all_day: bool,
                        timezone: str, start: datetime, end: datetime) -> bool | None:
    """overlaps() without parsing, from an event's stored columns, for the common series: one VEVENT
    with one RRULE and nothing that adds, removes or moves occurrences. None for any other."""
    if not rule or text.count("BEGIN:VEVENT") != 1:
        return None
    event = text[text.index("BEGIN:VEVENT"):]  # a VTIMEZONE has rules of its own
    if event.count("RRULE") != 1 or any(marker in event for marker in NOT_A_PLAIN_RULE):
        return None
    if all_day:
        begin = datetime.combine(first_start.astimezone(UTC).date(), time())
    elif timezone:
        begin = first_start.astimezone(zone(timezone))
    elif ZONED_START.search(event):
        return None  # a zone we do not know: its rules are in the text alone
    else:
        begin = first_start
    return _first_overlaps(rule, begin, first_end - first_start, [], start, end)


def overlaps(text: str, start: datetime, end: datetime) -> bool:
    """Whether any occurrence of the resource overlaps [start, end): stops at the first one found."""
    try:
        calendar = icalendar.Calendar.from_ical(text)  # stored text: parse() checked it on write
    except ValueError as exc:
        raise ICalError(str(exc)) from exc
    events = calendar.walk("VEVENT")
    if not events:
        return False
    if len(events) == 1 and "RRULE" in events[0]:
        found = _rule_overlaps(events[0], start, end)
        if found is not None:
            return found
    for component in recurring_ical_events.of(calendar).after(start):
        span = _span(component)
        if span[0] >= end:
            return False
        if _overlaps(span, start, end):
            return True
    return False


def _in_utc(component, name: str) -> None:
    value = component.get(name)
    if value is None or not isinstance(value.dt, datetime) or value.dt.tzinfo is None:
        return  # dates and floating times have no zone to convert from
    params = {key: item for key, item in value.params.items() if key != "TZID"}
    component.pop(name)
    component.add(name, value.dt.astimezone(UTC), parameters=params or None)


def expand(text: str, start: datetime, end: datetime) -> str:
    """RFC 4791 9.6.5: each occurrence overlapping [start, end) as its own VEVENT, with its
    RECURRENCE-ID when the resource is a series, times in UTC, no recurrence rules, no VTIMEZONE."""
    calendar = parse(text)
    series = is_series(calendar)
    out = _empty()
    for component in _instances(calendar, start, end):
        for name in ("RRULE", "RDATE", "EXDATE", "EXRULE"):
            component.pop(name, None)
        if not series:
            component.pop("RECURRENCE-ID", None)
        for name in ("DTSTART", "DTEND", "RECURRENCE-ID"):
            _in_utc(component, name)
        out.add_component(component)
    return out.to_ical().decode()


def limit_recurrence_set(text: str, start: datetime, end: datetime) -> str:
    """RFC 4791 9.6.6: the master and only the overridden occurrences that overlap [start, end)."""
    calendar = parse(text)
    calendar.subcomponents = [
        component for component in calendar.subcomponents
        if not (component.name == "VEVENT" and "RECURRENCE-ID" in component)
        or _overlaps(_span(component), start, end)
        or start <= _recurrence_key(component["RECURRENCE-ID"]) < end]
    return calendar.to_ical().decode()


@dataclass
class Busy:
    start: datetime  # UTC
    end: datetime
    kind: str  # FBTYPE: BUSY or BUSY-TENTATIVE


def busy_periods(text: str, start: datetime, end: datetime) -> list[Busy]:
    """What the resource makes busy in [start, end), clipped to it: opaque occurrences that are not
    cancelled (RFC 4791 7.10), tentative ones as BUSY-TENTATIVE."""
    calendar = parse(text)
    periods = []
    for component in _instances(calendar, start, end):
        status = str(component.get("STATUS", "CONFIRMED")).upper()
        if status == "CANCELLED" or str(component.get("TRANSP", "OPAQUE")).upper() == "TRANSPARENT":
            continue
        begin, finish = _span(component)
        if finish <= begin:
            continue  # an instant blocks no time
        periods.append(Busy(max(begin, start), min(finish, end), "BUSY-TENTATIVE" if status == "TENTATIVE" else "BUSY"))
    return periods


def freebusy(periods: list[Busy], start: datetime, end: datetime) -> str:
    """A VCALENDAR with one VFREEBUSY for [start, end): periods of a kind merged where they touch, in UTC."""
    merged: list[Busy] = []
    for period in sorted(periods, key=lambda item: (item.kind, item.start)):
        last = merged[-1] if merged else None
        if last is not None and last.kind == period.kind and period.start <= last.end:
            last.end = max(last.end, period.end)
        else:
            merged.append(Busy(period.start, period.end, period.kind))
    out = _empty()
    component = icalendar.FreeBusy()
    component.add("DTSTAMP", datetime.now(UTC))
    component.add("DTSTART", start)
    component.add("DTEND", end)
    for period in sorted(merged, key=lambda item: item.start):
        component.add("FREEBUSY", (period.start, period.end), parameters={"FBTYPE": period.kind})
    out.add_component(component)
    return out.to_ical().decode()


# --- Tasks (VTODO) ---------------------------------------------------------------------------

TASK_STATUSES = ("NEEDS-ACTION", "IN-PROCESS", "COMPLETED", "CANCELLED")


@dataclass
class TaskFields:
    uid: str = ""
    title: str = ""
    description: str = ""
    start: datetime | None = None  # DTSTART, aware UTC
    due: datetime | None = None  # aware UTC; a due date is its midnight UTC
    due_date_only: bool = False
    completed_at: datetime | None = None
    status: str = "NEEDS-ACTION"
    priority: int = 0  # 1 highest .. 9 lowest, 0 none (RFC 5545 3.8.1.9)
    recurrence: str = ""
    color: str = ""
    sequence: int = 0


def parse_task(text: str) -> icalendar.Calendar:
    """One task's calendar object resource: VTODOs of a single UID."""
    return _parse_object(text, "VTODO")


def task_master(calendar: icalendar.Calendar):
    todos = calendar.walk("VTODO")
    return next((todo for todo in todos if "RECURRENCE-ID" not in todo), todos[0])


def task_fields_of(calendar: icalendar.Calendar) -> TaskFields:
    todo = task_master(calendar)
    due_value = todo["DUE"].dt if "DUE" in todo else None
    start = _utc(todo["DTSTART"].dt) if "DTSTART" in todo else None
    if due_value is None and start is not None and "DURATION" in todo:
        due_value = start + todo["DURATION"].dt
    completed = _utc(todo["COMPLETED"].dt) if "COMPLETED" in todo else None
    status = str(todo.get("STATUS", "")).upper()
    if status not in TASK_STATUSES:
        status = "COMPLETED" if completed else "NEEDS-ACTION"
    try:
        priority = min(max(int(todo.get("PRIORITY", 0) or 0), 0), 9)
    except (TypeError, ValueError):
        priority = 0
    rrules = _as_list(todo.get("RRULE"))
    return TaskFields(
        uid=str(todo["UID"]), title=str(todo.get("SUMMARY", ""))[:255] or "(no title)",
        description=str(todo.get("DESCRIPTION", "")), start=start,
        due=_utc(due_value) if due_value is not None else None,
        due_date_only=due_value is not None and not isinstance(due_value, datetime),
        completed_at=completed, status=status, priority=priority,
        recurrence=rrules[0].to_ical().decode() if rrules else "",
        color=_hex(str(todo.get("COLOR", ""))), sequence=int(todo.get("SEQUENCE", 0) or 0))


def build_task(fields: TaskFields, *, base: str | None = None) -> str:
    """A task's resource text: new for these fields, or `base` with only the fields set here changed
    (alarms, categories and what clients add survive)."""
    if base:
        calendar = parse_task(base)
        todo = task_master(calendar)
    else:
        calendar = _empty()
        todo = icalendar.Todo()
        todo.add("UID", fields.uid)
        todo.add("CREATED", datetime.now(UTC))
        calendar.add_component(todo)
    _set(todo, "SUMMARY", fields.title)
    _set(todo, "DESCRIPTION", fields.description)
    todo.pop("DURATION", None)
    if fields.due is None:
        todo.pop("DUE", None)
    else:
        _set(todo, "DUE", fields.due.astimezone(UTC).date() if fields.due_date_only else fields.due.astimezone(UTC))
    if "DTSTART" in todo and "DUE" in todo and \
            isinstance(todo["DTSTART"].dt, datetime) != isinstance(todo["DUE"].dt, datetime):
        todo.pop("DTSTART")  # DTSTART and DUE share a value type (RFC 5545 3.8.2.3)
    _set(todo, "PRIORITY", fields.priority or None)
    _set(todo, "STATUS", fields.status)
    if fields.status == "COMPLETED":
        _set(todo, "COMPLETED", (fields.completed_at or datetime.now(UTC)).astimezone(UTC))
        _set(todo, "PERCENT-COMPLETE", 100)
    else:
        todo.pop("COMPLETED", None)
        if str(todo.get("PERCENT-COMPLETE", "")) == "100":
            todo.pop("PERCENT-COMPLETE", None)
    _set(todo, "COLOR", fields.color)
    _set(todo, "SEQUENCE", fields.sequence)
    _set(todo, "DTSTAMP", datetime.now(UTC))
    _set(todo, "LAST-MODIFIED", datetime.now(UTC))
    return calendar.to_ical().decode()
