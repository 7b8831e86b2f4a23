"""Recurrence rules over stored events, for every interface that shows or changes a series (webmail,
REST): find one occurrence by its recurrence id, carry a change made on one occurrence to the whole
series, start a weekly series on one of its days, and tell whether a series occurs in a range.
Reading and expanding the iCalendar data itself is ical's."""
from datetime import UTC, date, datetime, time, timedelta

from calendars import ical
from calendars.models import CalendarEvent

WEEKDAY_CODES = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")  # BYDAY codes, in date.weekday() order


def occurrence_of(event: CalendarEvent, recurrence_id: datetime) -> ical.Occurrence | None:
    """The occurrence of a series that originally started at `recurrence_id` (UTC), wherever it was
    moved to; None when the series has no such occurrence."""
    around = [recurrence_id]
    for component in ical.parse(event.ical).walk("VEVENT"):  # a moved occurrence is found where it went
        if "RECURRENCE-ID" in component and ical._utc(component["RECURRENCE-ID"].dt) == recurrence_id:
            around.append(ical._utc(component["DTSTART"].dt))
    for moment in around:
        for occurrence in ical.occurrences(event.ical, moment - timedelta(days=1), moment + timedelta(days=2)):
            if occurrence.recurrence_id == recurrence_id:
                return occurrence
    return None


def as_occurrence(event: CalendarEvent) -> ical.Occurrence:
    """The event itself (a series: as its stored first occurrence) in the shape of an occurrence."""
    return ical.Occurrence(uid=event.uid, title=event.title, start=event.start, end=event.end, all_day=event.all_day,
                           recurrence_id=None, location=event.location, description=event.description,
                           color=event.color)


def weekly_first(start: datetime, end: datetime, weekdays, zone, all_day: bool) -> tuple[datetime, datetime]:
    """A weekly series starts on one of its days (clients disagree on a DTSTART that is not): `start`
    and `end` moved on to the first of `weekdays` (BYDAY codes) in `zone` (all-day: by UTC dates)."""
    chosen = {WEEKDAY_CODES.index(code) for code in weekdays}
    if not chosen:
        return start, end
    local = start.astimezone(UTC if all_day else zone)
    shift = next(offset for offset in range(7) if (local.weekday() + offset) % 7 in chosen)
    if not shift:
        return start, end
    moved = (local.replace(tzinfo=None) + timedelta(days=shift)).replace(tzinfo=local.tzinfo).astimezone(UTC)
    return moved, moved + (end - start)


def series_times(*, event: CalendarEvent, occurrence: ical.Occurrence, day: date, at: time | None, all_day: bool,
                 length: timedelta, zone) -> tuple[datetime, datetime]:
    """A change made on one occurrence (now on `day`, at `at` in `zone`, lasting `length`), applied to
    the whole series: the series' first day moves by as many days as the occurrence did, and takes the
    new time of day and length."""
    occurrence_day = occurrence.start.astimezone(UTC if occurrence.all_day else zone).date()
    series_day = event.start.astimezone(UTC if event.all_day else zone).date()
    first_day = series_day + (day - occurrence_day)
    if all_day:
        start = datetime.combine(first_day, time(), tzinfo=UTC)
    else:
        start = datetime.combine(first_day, at, tzinfo=zone).astimezone(UTC)
    return start, start + length


def series_occurs_between(event: CalendarEvent, start: datetime, end: datetime) -> bool:
    """Whether an occurrence of a series overlaps [start, end). Windows double in length, so a long
    range over a dense series is expanded only up to its first occurrence."""
    lower = max(start, event.start)
    upper = min(end, event.range_end) if event.range_end else end
    step = timedelta(days=7)
    while lower < upper:
        stop = min(lower + step, upper)
        if ical.occurrences(event.ical, lower, stop):
            return True
        lower, step = stop, step * 2
    return False
