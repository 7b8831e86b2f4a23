"""The owner's calendar in the webmail: month, week and day views, the event pages (one occurrence of
a series or the whole series), .ics import and export, the calendar's settings and its read-only
feed. Every write goes through calendars.services; every time is shown in the calendar's
zone (Calendar.timezone, UTC while empty). Plain links and forms; static/js/webmail-calendar.js only
presets the zone from the browser and tidies the event form."""
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import wraps

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone as django_timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mailcore.accounts.selectors import plan_gate_message
from calendars import ical
from calendars.models import Calendar, CalendarEvent
from calendars.selectors import (
    PlacedOccurrence, calendar_list, mailbox_event_get, mailbox_events, occurrences_between,
)
from calendars.services import (
    EventConflict,
    EventInvalid,
    calendar_by_feed_token,
    calendar_export,
    calendar_for,
    calendar_update,
    event_create,
    event_delete,
    event_move,
    event_update,
    feed_revoke,
    feed_token_create,
)
from imports.models import ImportJob
from imports.selectors import import_job_of_mailbox, import_jobs_running
from imports.services import events_import_start
from portal.webmail.access import owner_required
from portal.webmail.calendar_forms import (
    FIRST_YEAR,
    LAST_YEAR,
    SWATCHES,
    WEEKDAYS,
    CalendarSettingsForm,
    EventForm,
    ImportForm,
    TimezonePresetForm,
    event_initial,
    recurrence_build,
    recurrence_parse,
    recurrence_text,
)

VIEWS = ("month", "week", "day")
MONTH_CHIPS = 3  # chips a month cell shows before "+N more"
RID_FORMAT = "%Y%m%dT%H%M%SZ"
STATUS_WORDS = {"NEEDS-ACTION": "No answer yet", "ACCEPTED": "Accepted", "DECLINED": "Declined",
                "TENTATIVE": "Maybe", "DELEGATED": "Delegated"}


def calendar_owner(view):
    """The signed-in mailbox and its calendar for the view, or the "not in your plan" page."""

    @wraps(view)
    def wrapped(request, mailbox, *args, **kwargs):
        if not mailbox.effective_plan.has_feature("calendar"):
            return render(request, "webmail/calendar/not_in_plan.html",
                          {"mailbox": mailbox, "webmail_app": "calendar", "plan": mailbox.effective_plan,
                           "message": plan_gate_message("calendar")}, status=403)
        return view(request, mailbox, calendar_for(account=mailbox.account, mailbox=mailbox), *args, **kwargs)

    return owner_required(wrapped)


def calendar_zone(calendar: Calendar):
    try:
        return ical.zone(calendar.timezone)
    except ical.ICalError:
        return UTC


def _page(request, mailbox, calendar, template: str, context: dict, *, status: int = 200):
    zone = calendar_zone(calendar)
    with django_timezone.override(zone):  # any datetime a template prints is in the calendar's zone
        return render(request, f"webmail/calendar/{template}", {
            "mailbox": mailbox, "calendar": calendar, "webmail_app": "calendar",
            "calendars": calendar_list(account=mailbox.account, mailbox=mailbox),
            "zone_name": calendar.timezone or "UTC", "today": datetime.now(zone).date(), **context}, status=status)


# what the views show


@dataclass
class Chip:
    """One occurrence as a view shows it (in one day, for the week and day grids)."""
    placed: PlacedOccurrence
    url: str
    label: str  # its time ("09:00", "All day")
    top: float = 0  # week/day grid: percent of the day from the top, height, lane of overlapping events
    height: float = 0
    lane: int = 0
    lanes: int = 1

    @property
    def title(self) -> str:
        return self.placed.occurrence.title

    @property
    def color(self) -> str:
        return self.placed.color

    @property
    def all_day(self) -> bool:
        return self.placed.occurrence.all_day

    @property
    def left(self) -> float:
        return round(100 * self.lane / self.lanes, 3)

    @property
    def width(self) -> float:
        return round(100 / self.lanes, 3)


@dataclass
class Day:
    day: date
    chips: list[Chip] = field(default_factory=list)  # month: everything; week/day: the all-day row
    timed: list[Chip] = field(default_factory=list)  # week/day: the hour grid
    in_month: bool = True

    @property
    def shown(self) -> list[Chip]:
        return self.chips[:MONTH_CHIPS]

    @property
    def more(self) -> int:
        return max(0, len(self.chips) - MONTH_CHIPS)


def occurrence_url(placed: PlacedOccurrence) -> str:
    url = reverse("webmail:calendar_event", args=[placed.event.pk])
    rid = placed.occurrence.recurrence_id
    return f"{url}?occurrence={rid:{RID_FORMAT}}" if rid else url


def _local_days(placed: PlacedOccurrence, zone) -> tuple[date, date]:
    """First and last local day an occurrence covers (all-day ones by their dates, as iCalendar has them)."""
    occurrence = placed.occurrence
    if occurrence.all_day:
        first = occurrence.start.astimezone(UTC).date()
        return first, max(first, (occurrence.end.astimezone(UTC) - timedelta(days=1)).date())
    first = occurrence.start.astimezone(zone).date()
    last = (max(occurrence.end, occurrence.start + timedelta(microseconds=1)) - timedelta(microseconds=1))
    return first, last.astimezone(zone).date()


def _minutes(moment: datetime, zone, day: date) -> int:
    """Wall-clock minutes of `moment` into `day` (0..1440, clipped)."""
    local = moment.astimezone(zone)
    if local.date() < day:
        return 0
    if local.date() > day:
        return 1440
    return local.hour * 60 + local.minute


def _lay_out(chips: list[Chip]) -> None:
    """Overlapping timed chips side by side: each gets a lane within its group of overlaps."""
    group: list[Chip] = []
    lanes_end: list[float] = []
    group_end = 0.0
    for chip in sorted(chips, key=lambda item: (item.top, -item.height)):
        if group and chip.top >= group_end:
            for member in group:
                member.lanes = len(lanes_end)
            group, lanes_end, group_end = [], [], 0.0
        lane = next((index for index, end in enumerate(lanes_end) if end <= chip.top), len(lanes_end))
        if lane == len(lanes_end):
            lanes_end.append(0)
        lanes_end[lane] = chip.top + chip.height
        chip.lane = lane
        group.append(chip)
        group_end = max(group_end, chip.top + chip.height)
    for member in group:
        member.lanes = len(lanes_end)


def _days(events, first: date, count: int, zone, *, grid: bool) -> list[Day]:
    """The days [first, first + count) with the occurrences in each. `grid`: timed ones go to the hour grid."""
    start = datetime.combine(first, time(), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(first + timedelta(days=count), time(), tzinfo=zone).astimezone(UTC)
    days = [Day(first + timedelta(days=offset)) for offset in range(count)]
    for placed in occurrences_between(events, start, end):
        occurrence = placed.occurrence
        url = occurrence_url(placed)
        first_day, last_day = _local_days(placed, zone)
        for day in days:
            if not first_day <= day.day <= last_day:
                continue
            if occurrence.all_day:
                day.chips.append(Chip(placed, url, "All day"))
                continue
            starts_here = occurrence.start.astimezone(zone).date() == day.day
            label = f"{occurrence.start.astimezone(zone):%H:%M}" if starts_here else "…"
            if not grid:
                day.chips.append(Chip(placed, url, label))
                continue
            top = _minutes(occurrence.start, zone, day.day)
            bottom = max(_minutes(occurrence.end, zone, day.day), top + 20)  # at least 20 minutes tall
            span = f"{occurrence.start.astimezone(zone):%H:%M}–{occurrence.end.astimezone(zone):%H:%M}"
            chip = Chip(placed, url, span,
                        top=round(100 * top / 1440, 3), height=round(100 * (min(bottom, 1440) - top) / 1440, 3))
            day.timed.append(chip)
    for day in days:
        day.chips.sort(key=lambda chip: (not chip.all_day, chip.placed.occurrence.start))
        _lay_out(day.timed)
    return days


def _view_date(request, zone) -> tuple[str, date]:
    view = request.GET.get("view", "month")
    view = view if view in VIEWS else "month"
    try:
        day = date.fromisoformat(request.GET.get("date", ""))
    except ValueError:
        day = None
    if day is None or not FIRST_YEAR <= day.year <= LAST_YEAR:
        day = datetime.now(zone).date()
    return view, day


def _month_start(day: date, months: int = 0) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


@require_safe
@calendar_owner
def calendar_view(request, mailbox, calendar):
    zone = calendar_zone(calendar)
    view, day = _view_date(request, zone)
    context = {"view": view, "date": day, "hours": [f"{hour:02d}:00" for hour in range(24)],
               "weekday_names": [label for _, label in WEEKDAYS]}
    events = mailbox_events(mailbox=mailbox)  # every calendar of the mailbox, each event in its calendar's colour
    if view == "month":
        first = _month_start(day)
        grid_start = first - timedelta(days=first.weekday())
        days = _days(events, grid_start, 42, zone, grid=False)
        for item in days:
            item.in_month = item.day.month == first.month
        context.update(weeks=[days[index:index + 7] for index in range(0, 42, 7)], title=f"{first:%B %Y}",
                       previous=_month_start(day, -1), next=_month_start(day, 1))
    elif view == "week":
        monday = day - timedelta(days=day.weekday())
        sunday = monday + timedelta(days=6)
        days = _days(events, monday, 7, zone, grid=True)
        same_month = monday.month == sunday.month
        context.update(days=days, previous=monday - timedelta(days=7), next=monday + timedelta(days=7),
                       title=(f"{monday.day} – {sunday:%-d %b %Y}" if same_month
                              else f"{monday:%-d %b} – {sunday:%-d %b %Y}"))
    else:
        days = _days(events, day, 1, zone, grid=True)
        context.update(days=days, previous=day - timedelta(days=1), next=day + timedelta(days=1),
                       title=f"{day:%A %-d %B %Y}")
    context["has_all_day"] = view != "month" and any(item.chips for item in days)
    return _page(request, mailbox, calendar, "calendar.html", context)


# events


def _event_or_404(mailbox, event_id: int) -> CalendarEvent:
    try:
        return mailbox_event_get(mailbox=mailbox, event_id=event_id)
    except CalendarEvent.DoesNotExist:
        raise Http404("No such event.") from None


def _as_utc(value) -> datetime:
    """An iCalendar date or date-time as UTC (a date is its midnight, a floating time is UTC), as ical reads them."""
    if not isinstance(value, datetime):
        return datetime.combine(value, time(), tzinfo=UTC)
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def _occurrence_or_404(event: CalendarEvent, raw: str | None) -> ical.Occurrence | None:
    """The occurrence of a series named by `?occurrence=` (its original start, UTC), or None for the
    event itself. A series' occurrence is always named; a name that is not one of its occurrences is 404."""
    if not raw:
        return None
    if not event.recurrence:
        raise Http404("This event does not repeat.")
    try:
        rid = datetime.strptime(raw, RID_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise Http404("No such occurrence.") from None
    around = [rid]
    for component in ical.parse(event.ical).walk("VEVENT"):  # a moved occurrence is found where it went
        if "RECURRENCE-ID" in component and _as_utc(component["RECURRENCE-ID"].dt) == rid:
            around.append(_as_utc(component["DTSTART"].dt))
    for moment in around:
        for occurrence in ical.occurrences(event.ical, moment - timedelta(days=1), moment + timedelta(days=2)):
            if occurrence.recurrence_id == rid:
                return occurrence
    raise Http404("No such occurrence.")


def _as_occurrence(event: CalendarEvent) -> ical.Occurrence:
    return ical.Occurrence(uid=event.uid, title=event.title, start=event.start, end=event.end, all_day=event.all_day,
                           recurrence_id=None, location=event.location, description=event.description,
                           color=event.color)


def when_text(occurrence: ical.Occurrence, zone) -> str:
    """"Mon 7 Dec 2026, 09:00–09:30" in the calendar's zone; all-day: the dates."""
    if occurrence.all_day:
        first = occurrence.start.astimezone(UTC).date()
        last = max(first, (occurrence.end.astimezone(UTC) - timedelta(days=1)).date())
        return f"{first:%a %-d %b %Y}" + (f" – {last:%a %-d %b %Y}" if last != first else "") + ", all day"
    start, end = occurrence.start.astimezone(zone), occurrence.end.astimezone(zone)
    if start.date() == end.date():
        return f"{start:%a %-d %b %Y}, {start:%H:%M}–{end:%H:%M}"
    return f"{start:%a %-d %b %Y, %H:%M} – {end:%a %-d %b %Y, %H:%M}"


def _week_url(day: date) -> str:
    return f"{reverse('webmail:calendar')}?view=week&date={day.isoformat()}"


@require_safe
@calendar_owner
def event_detail(request, mailbox, calendar, event_id: int):
    event = _event_or_404(mailbox, event_id)
    occurrence = _occurrence_or_404(event, request.GET.get("occurrence"))
    zone = calendar_zone(calendar)
    shown = occurrence or _as_occurrence(event)
    rid = f"?occurrence={occurrence.recurrence_id:{RID_FORMAT}}" if occurrence else ""
    return _page(request, mailbox, calendar, "event.html", {
        "event": event, "occurrence": occurrence, "shown": shown, "when": when_text(shown, zone),
        "repeats": recurrence_text(event.recurrence, zone=zone, all_day=event.all_day),
        "color": shown.color or event.color or event.calendar.color,
        "attendees": [{**attendee, "status_text": STATUS_WORDS.get(attendee.get("status", ""), attendee.get("status"))}
                      for attendee in event.attendees],
        "edit_url": reverse("webmail:calendar_event_edit", args=[event.pk]) + rid,
        "delete_url": reverse("webmail:calendar_event_delete", args=[event.pk]) + rid,
        "back_url": _week_url((shown.start.astimezone(UTC) if shown.all_day else shown.start.astimezone(zone)).date()),
    })


def _first_on_weekdays(start: datetime, end: datetime, weekdays, zone, all_day: bool) -> tuple[datetime, datetime]:
    """A weekly series starts on one of its days (clients disagree on a DTSTART that is not)."""
    codes = [code for code, _ in WEEKDAYS]
    chosen = {codes.index(code) for code in weekdays}
    if not chosen:
        return start, end
    local = start.astimezone(UTC if all_day else zone)
    shift = next(offset for offset in range(7) if (local.weekday() + offset) % 7 in chosen)
    if not shift:
        return start, end
    moved = (local.replace(tzinfo=None) + timedelta(days=shift)).replace(tzinfo=local.tzinfo).astimezone(UTC)
    return moved, moved + (end - start)


def _series_times(form: EventForm, event: CalendarEvent, occurrence: ical.Occurrence) -> tuple[datetime, datetime]:
    """A change made on one occurrence, applied to the whole series: the series' first day moves by as
    many days as the occurrence did, and takes the new time of day and length."""
    data = form.cleaned_data
    new_start, new_end = form.moments()
    occurrence_day = occurrence.start.astimezone(UTC if occurrence.all_day else form.zone).date()
    series_day = event.start.astimezone(UTC if event.all_day else form.zone).date()
    first_day = series_day + (data["start_date"] - occurrence_day)
    if data["all_day"]:
        start = datetime.combine(first_day, time(), tzinfo=UTC)
    else:
        start = datetime.combine(first_day, data["start_time"], tzinfo=form.zone).astimezone(UTC)
    return start, start + (new_end - new_start)


def _event_changes(form: EventForm) -> dict:
    data = form.cleaned_data
    start, end = form.moments()
    return {"title": data["title"], "start": start, "end": end, "all_day": data["all_day"],
            "location": data["location"], "description": data["description"], "color": form.color_value(),
            "attendees": data["attendees"]}


def _recurrence_of(form: EventForm, *, current: str = "") -> str:
    data = form.cleaned_data
    if data["repeat"] == "custom":
        return current
    return recurrence_build(form.recurrence(), zone=form.zone, all_day=data["all_day"])


def event_calendars(mailbox):
    """The mailbox's calendars that hold events: the choice on the event form."""
    return [each for each in calendar_list(account=mailbox.account, mailbox=mailbox) if each.holds("VEVENT")]


def _form_page(request, mailbox, calendar, form, *, event=None, occurrence=None, status=200):
    return _page(request, mailbox, calendar, "event_form.html", {
        "form": form, "event": event, "occurrence": occurrence, "swatches": SWATCHES,
        "when": when_text(occurrence, calendar_zone(calendar)) if occurrence else "",
        "cancel_url": (reverse("webmail:calendar_event", args=[event.pk])
                       + (f"?occurrence={occurrence.recurrence_id:{RID_FORMAT}}" if occurrence else "")
                       if event else reverse("webmail:calendar")),
    }, status=status)


def _new_initial(request, zone) -> dict:
    now = datetime.now(zone)
    try:
        day = date.fromisoformat(request.GET.get("date", ""))
    except ValueError:
        day = now.date()
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        day = now.date()
    try:
        at = time.fromisoformat(request.GET.get("time", ""))
    except ValueError:
        at = time(min(now.hour + 1, 23)) if day == now.date() else time(9)
    start = datetime.combine(day, at, tzinfo=zone).astimezone(UTC)
    initial = event_initial(start=start, end=start + timedelta(hours=1), all_day=False, zone=zone)
    initial["weekdays"] = [WEEKDAYS[day.weekday()][0]]
    return initial


@require_http_methods(["GET", "POST"])
@calendar_owner
def event_new(request, mailbox, calendar):
    zone = calendar_zone(calendar)
    choices = event_calendars(mailbox)
    initial = _new_initial(request, zone)
    initial["calendar"] = calendar.pk
    form = EventForm(request.POST or None, zone=zone, initial=initial, calendars=choices)
    if request.method == "POST" and form.is_valid():
        changes = _event_changes(form)
        recurrence = _recurrence_of(form)
        if form.cleaned_data["repeat"] == "weekly":
            changes["start"], changes["end"] = _first_on_weekdays(changes["start"], changes["end"],
                                                                  form.cleaned_data["weekdays"], zone,
                                                                  changes["all_day"])
        try:
            event = event_create(calendar=form.chosen_calendar(calendar), timezone=calendar.timezone,
                                 recurrence=recurrence, **changes)
        except EventInvalid as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, f"“{event.title}” added.")
            return redirect(_week_url(form.cleaned_data["start_date"]))
    return _form_page(request, mailbox, calendar, form, status=400 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@calendar_owner
def event_edit(request, mailbox, calendar, event_id: int):
    event = _event_or_404(mailbox, event_id)
    occurrence = _occurrence_or_404(event, request.GET.get("occurrence"))
    zone = calendar_zone(calendar)
    shown = occurrence or _as_occurrence(event)
    preset = recurrence_parse(event.recurrence, zone=zone, all_day=event.all_day)
    custom = event.recurrence if preset.repeat == "custom" else ""
    initial = event_initial(start=shown.start, end=shown.end, all_day=shown.all_day, zone=zone, title=shown.title,
                            location=shown.location, description=shown.description, color=shown.color,
                            attendees=event.attendee_emails, rule=event.recurrence)
    if initial["repeat"] == "weekly" and not initial["weekdays"]:
        local = event.start.astimezone(UTC if event.all_day else zone)
        initial["weekdays"] = [WEEKDAYS[local.weekday()][0]]
    initial["calendar"] = event.calendar_id
    form = EventForm(request.POST or None, zone=zone, occurrence=occurrence is not None, custom_rule=custom,
                     initial=initial, calendars=event_calendars(mailbox))
    if request.method == "POST" and form.is_valid():
        changes = _event_changes(form)
        try:
            if occurrence is not None and form.is_occurrence_only():
                event = event_update(event=event, occurrence=occurrence.recurrence_id, **changes)
                done = f"This occurrence of “{event.title}” changed; the others stay as they were."
            else:
                if occurrence is not None:
                    changes["start"], changes["end"] = _series_times(form, event, occurrence)
                changes["recurrence"] = _recurrence_of(form, current=event.recurrence)
                if form.cleaned_data["repeat"] == "weekly":
                    changes["start"], changes["end"] = _first_on_weekdays(
                        changes["start"], changes["end"], form.cleaned_data["weekdays"], zone, changes["all_day"])
                event = event_update(event=event, **changes)
                done = f"“{event.title}” saved" + (" (every event in the series)." if event.recurrence else ".")
            target = form.chosen_calendar(event.calendar)
            if target.pk != event.calendar_id:
                event, _ = event_move(event=event, calendar=target)
                done += f" It is in {target.name} now."
        except (EventInvalid, EventConflict) as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, done)
            return redirect(_week_url(form.cleaned_data["start_date"]))
    return _form_page(request, mailbox, calendar, form, event=event, occurrence=occurrence,
                      status=400 if request.method == "POST" else 200)


@require_http_methods(["GET", "POST"])
@calendar_owner
def event_delete_view(request, mailbox, calendar, event_id: int):
    event = _event_or_404(mailbox, event_id)
    occurrence = _occurrence_or_404(event, request.GET.get("occurrence"))
    zone = calendar_zone(calendar)
    shown = occurrence or _as_occurrence(event)
    if request.method == "POST":
        scope = request.POST.get("scope", "this")
        title = shown.title
        if occurrence is not None and scope != "all":
            event_delete(event=event, occurrence=occurrence.recurrence_id)
            messages.success(request, f"This occurrence of “{title}” deleted; the others stay.")
        else:
            event_delete(event=event)
            messages.success(request, f"“{event.title}” deleted" + (" with every event in the series."
                                                                     if event.recurrence else "."))
        day = (shown.start.astimezone(UTC) if shown.all_day else shown.start.astimezone(zone)).date()
        return redirect(_week_url(day))
    rid = f"?occurrence={occurrence.recurrence_id:{RID_FORMAT}}" if occurrence else ""
    return _page(request, mailbox, calendar, "event_delete.html", {
        "event": event, "occurrence": occurrence, "shown": shown, "when": when_text(shown, zone),
        "cancel_url": reverse("webmail:calendar_event", args=[event.pk]) + rid,
        "action": reverse("webmail:calendar_event_delete", args=[event.pk]) + rid})


# import, export, settings, feed


@require_http_methods(["GET", "POST"])
@calendar_owner
def calendar_import(request, mailbox, calendar):
    """A small file is imported before the page answers; a larger one goes on in the background and
    the answer is its progress page."""
    form = ImportForm(request.POST or None, request.FILES or None)
    result, status = None, 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                job = events_import_start(calendar=calendar, text=form.cleaned_data["file"],
                                          filename=request.FILES["file"].name)
            except EventInvalid as exc:
                form.add_error("file", f"Nothing was imported: {exc.detail}")
            else:
                if not job.done:
                    return redirect("webmail:calendar_import_progress", job_id=job.pk)
                result, status, form = job, 200, ImportForm()
    return _page(request, mailbox, calendar, "import.html", {
        "form": form, "result": result,
        "running": import_jobs_running(mailbox=mailbox, kind=ImportJob.Kind.EVENTS)}, status=status)


@require_safe
@calendar_owner
def calendar_import_progress(request, mailbox, calendar, job_id: int):
    """How far a background import has got; the region polls itself (htmx) while it runs."""
    try:
        job = import_job_of_mailbox(mailbox=mailbox, job_id=job_id, kind=ImportJob.Kind.EVENTS)
    except ImportJob.DoesNotExist:
        raise Http404("No such import.") from None
    context = {"job": job, "noun": "event",
               "progress_url": reverse("webmail:calendar_import_progress", args=[job.pk]),
               "done_url": reverse("webmail:calendar"), "done_label": "Show my calendar",
               "again_url": reverse("webmail:calendar_import")}
    if request.htmx:
        return render(request, "components/import_progress.html", context)
    return _page(request, mailbox, calendar, "import_progress.html", context)


@require_safe
@calendar_owner
def calendar_download(request, mailbox, calendar):
    response = HttpResponse(calendar_export(calendar=calendar), content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="calendar.ics"'
    return response


def _settings_page(request, mailbox, calendar, form, *, feed_url: str = "", status: int = 200):
    return _page(request, mailbox, calendar, "settings.html",
                 {"form": form, "feed_url": feed_url, "has_feed": bool(calendar.feed_token_digest)}, status=status)


@require_http_methods(["GET", "POST"])
@calendar_owner
def calendar_settings(request, mailbox, calendar):
    form = CalendarSettingsForm(request.POST or None, initial={"timezone": calendar.timezone, "color": calendar.color})
    if request.method == "POST":
        if form.is_valid():
            calendar_update(calendar=calendar, **form.cleaned_data)
            messages.success(request, f"Saved. Times are shown in {calendar.timezone or 'UTC'}.")
            return redirect("webmail:calendar_settings")
        return _settings_page(request, mailbox, calendar, form, status=400)
    return _settings_page(request, mailbox, calendar, form)


@require_POST
@calendar_owner
def calendar_timezone_preset(request, mailbox, calendar):
    """The browser's zone, taken once: only while the calendar has none (the owner's choice wins)."""
    form = TimezonePresetForm(request.POST)
    if not form.is_valid():
        return HttpResponse(status=400)
    if not calendar.timezone and form.cleaned_data["timezone"]:
        calendar_update(calendar=calendar, timezone=form.cleaned_data["timezone"])
    return HttpResponse(status=204)


@require_POST
@calendar_owner
def calendar_feed_create(request, mailbox, calendar):
    """A new feed link, shown on this answer only: the token is kept as a digest."""
    token = feed_token_create(calendar=calendar)
    url = request.build_absolute_uri(reverse("webmail:calendar_feed", args=[token]))
    form = CalendarSettingsForm(initial={"timezone": calendar.timezone, "color": calendar.color})
    return _settings_page(request, mailbox, calendar, form, feed_url=url)


@require_POST
@calendar_owner
def calendar_feed_revoke(request, mailbox, calendar):
    feed_revoke(calendar=calendar)
    messages.success(request, "The subscription link no longer works. Apps subscribed to it stop updating.")
    return redirect("webmail:calendar_settings")


@require_safe
def calendar_feed(request, token: str):
    """The read-only .ics feed: no session, the token is the key; a wrong or revoked one is 404, as is a
    calendar whose plan no longer includes calendars or whose mailbox is switched off or deleted."""
    try:
        calendar = calendar_by_feed_token(token)
    except Calendar.DoesNotExist:
        raise Http404("No such calendar feed.") from None
    if calendar.mailbox_id and not calendar.mailbox.is_active:
        raise Http404("No such calendar feed.")
    owner = calendar.mailbox.effective_plan if calendar.mailbox_id else calendar.account.plan
    if owner is None or not owner.has_feature("calendar"):
        raise Http404("No such calendar feed.")
    response = HttpResponse(calendar_export(calendar=calendar), content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'inline; filename="calendar.ics"'
    response["Cache-Control"] = "private, max-age=300"
    response["X-Robots-Tag"] = "noindex"
    return response
