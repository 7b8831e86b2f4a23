"""Reads of calendars and events, scoped to the caller: an account (REST) or one mailbox (webmail, CalDAV)."""
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q, QuerySet

from mailcore.accounts.models import Account
from calendars import ical
from calendars.models import Calendar, CalendarEvent
from mailcore.mailboxes.models import Mailbox


def events_overlapping(events: QuerySet[CalendarEvent], start: datetime | None, end: datetime | None) -> QuerySet[CalendarEvent]:
    """Events with an occurrence that may overlap [start, end): a coarse SQL filter (a series is in
    when its span overlaps; `occurrences_between` then looks at each occurrence)."""
    if end is not None:
        events = events.filter(start__lt=end)
    if start is not None:
        events = events.filter(Q(range_end__isnull=True) | Q(range_end__gt=start) | Q(start__gte=start))
    return events


def calendar_objects(*, calendar: Calendar, component: str) -> QuerySet[CalendarEvent] | None:
    """The calendar's resources of that component type (VEVENT, VTODO); None for a type it cannot hold."""
    if component in CalendarEvent.Component.values and calendar.holds(component):
        return calendar.events.filter(component=component)
    return None


def tasks_in_range(tasks: QuerySet[CalendarEvent], start: datetime, end: datetime) -> list[CalendarEvent]:
    """RFC 4791 9.9 for VTODOs, by DTSTART and DUE (a task with neither is in every range), in start order."""
    found = []
    for task in tasks.order_by("start", "pk"):
        begin = task.start or task.due
        finish = task.due or task.start
        if begin is None or (begin < end and finish >= start):
            found.append(task)
    return found


def objects_in_range(objects: QuerySet[CalendarEvent], start: datetime, end: datetime) -> list[CalendarEvent]:
    """The resources with an occurrence overlapping [start, end) (RFC 4791 9.9), in start order: the
    stored range decides for a single occurrence; only series are expanded, and only until one is found."""
    found = []
    for event in events_overlapping(objects, start, end).order_by("start", "pk"):
        if not event.is_series:
            found.append(event)
            continue
        try:
            inside = ical.plain_rule_overlaps(
                text=event.ical, rule=event.recurrence, first_start=event.start, first_end=event.end,
                all_day=event.all_day, timezone=event.timezone, start=start, end=end)
            if inside is None:
                inside = ical.overlaps(event.ical, start, end)
        except ical.ICalError:
            continue
        if inside:
            found.append(event)
    return found


def event_list(*, account: Account, mailbox: Mailbox | None = None, only_account_calendar: bool = False,
               calendar: Calendar | None = None, start: datetime | None = None,
               end: datetime | None = None) -> QuerySet[CalendarEvent]:
    events = CalendarEvent.objects.filter(calendar__account=account, component=CalendarEvent.Component.EVENT
                                          ).select_related("calendar__mailbox")
    if calendar is not None:
        events = events.filter(calendar=calendar)
    if mailbox is not None:
        events = events.filter(calendar__mailbox=mailbox)
    elif only_account_calendar:
        events = events.filter(calendar__mailbox__isnull=True)
    return events_overlapping(events, start, end).order_by("start", "pk")


def event_get(*, account: Account, event_id: int) -> CalendarEvent:
    """The account's event; another account's is CalendarCalendarEvent.DoesNotExist."""
    return CalendarEvent.objects.select_related("calendar__mailbox").get(
        calendar__account=account, component=CalendarEvent.Component.EVENT, pk=event_id)


def mailbox_calendar(*, mailbox: Mailbox) -> Calendar | None:
    """The mailbox's default calendar (None before its first use)."""
    return Calendar.objects.filter(mailbox=mailbox, is_default=True).first()


def calendar_list(*, account: Account, mailbox: Mailbox | None = None) -> QuerySet[Calendar]:
    """The calendars of one mailbox, or (no mailbox) the account's own, default first."""
    return Calendar.objects.filter(account=account, mailbox=mailbox).order_by("-is_default", "name", "pk")


def account_calendars(*, account: Account, mailbox: Mailbox | None = None) -> QuerySet[Calendar]:
    """Every calendar of the account (its own and its mailboxes'), or one mailbox's; default first."""
    calendars = Calendar.objects.filter(account=account).select_related("mailbox")
    if mailbox is not None:
        calendars = calendars.filter(mailbox=mailbox)
    return calendars.order_by(F("mailbox__address").asc(nulls_first=True), "-is_default", "name", "pk")


def calendar_get(*, account: Account, calendar_id: int) -> Calendar:
    """The account's calendar (its own or a mailbox's); any other is Calendar.DoesNotExist."""
    return Calendar.objects.select_related("mailbox").get(account=account, pk=calendar_id)


def calendar_by_slug(*, account: Account, mailbox: Mailbox | None, slug: str) -> Calendar | None:
    return Calendar.objects.filter(account=account, mailbox=mailbox, slug=slug).first()


def mailbox_event_get(*, mailbox: Mailbox, event_id: int) -> CalendarEvent:
    return CalendarEvent.objects.select_related("calendar").get(
        calendar__mailbox=mailbox, component=CalendarEvent.Component.EVENT, pk=event_id)


def mailbox_events(*, mailbox: Mailbox, calendars=None) -> QuerySet[CalendarEvent]:
    """The events (not tasks) of the mailbox's calendars, or of these ones of them."""
    events = CalendarEvent.objects.filter(calendar__mailbox=mailbox, component=CalendarEvent.Component.EVENT)
    if calendars is not None:
        events = events.filter(calendar__in=calendars)
    return events.select_related("calendar")


def task_list(*, account: Account, mailbox: Mailbox | None = None, calendar: Calendar | None = None,
              completed: bool | None = None) -> QuerySet[CalendarEvent]:
    """Tasks of the account's calendars (or one mailbox's, or one calendar), open first by due date."""
    tasks = CalendarEvent.objects.filter(calendar__account=account, component=CalendarEvent.Component.TASK
                                         ).select_related("calendar__mailbox")
    if calendar is not None:
        tasks = tasks.filter(calendar=calendar)
    elif mailbox is not None:
        tasks = tasks.filter(calendar__mailbox=mailbox)
    if completed is not None:
        tasks = tasks.filter(status="COMPLETED") if completed else tasks.exclude(status="COMPLETED")
    return tasks.order_by(F("completed_at").asc(nulls_first=True), F("due").asc(nulls_last=True), "pk")


def task_get(*, account: Account, task_id: int) -> CalendarEvent:
    """The account's task; another account's (or an event) is CalendarEvent.DoesNotExist."""
    return CalendarEvent.objects.select_related("calendar__mailbox").get(
        calendar__account=account, component=CalendarEvent.Component.TASK, pk=task_id)


@dataclass
class PlacedOccurrence:
    """One occurrence in a view, with the event it belongs to."""
    event: CalendarEvent
    occurrence: ical.Occurrence

    @property
    def color(self) -> str:
        return self.occurrence.color or self.event.color or self.event.calendar.color


def occurrences_between(events, start: datetime, end: datetime) -> list[PlacedOccurrence]:
    """Every occurrence of these events overlapping [start, end), in start order."""
    placed = []
    for event in events_overlapping(events, start, end):
        for occurrence in ical.occurrences(event.ical, start, end):
            placed.append(PlacedOccurrence(event=event, occurrence=occurrence))
    return sorted(placed, key=lambda item: (item.occurrence.start, item.event.pk))


def calendar_free_busy(*, calendar: Calendar, start: datetime, end: datetime) -> str:
    """The calendar's busy time in [start, end) as a VFREEBUSY (RFC 4791 7.10), for free-busy-query."""
    periods: list[ical.Busy] = []
    for event in events_overlapping(calendar.events.filter(component=CalendarEvent.Component.EVENT), start, end):
        try:
            periods += ical.busy_periods(event.ical, start, end)
        except ical.ICalError:
            continue
    return ical.freebusy(periods, start, end)
