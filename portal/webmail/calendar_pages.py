"""The owner's calendar in the webmail: month, week and day views, the event pages (one occurrence of
a series or the whole series), .ics import and export, the calendar's settings and its read-only
feed. Every write goes through mailcore.calendars.services; every time is shown in the calendar's
zone (Calendar.timezone, UTC while empty). Plain links and forms; static/js/webmail-calendar.js only
presets the zone from the browser and tidies the event form."""
from datetime import UTC, date, datetime, time, timedelta
from functools import wraps

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone as django_timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mailcore.accounts.selectors import plan_gate_message
from mailcore.calendars import ical
from mailcore.calendars.models import Calendar, CalendarEvent
from mailcore.calendars.recurrence import as_occurrence, occurrence_of, series_times, weekly_first
from mailcore.calendars.selectors import PlacedOccurrence, calendar_list, mailbox_event_get, mailbox_events
from mailcore.calendars.services import (
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
from mailcore.imports.models import ImportJob
from mailcore.imports.selectors import import_jobs_running
from mailcore.imports.services import events_import_start
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
from portal.webmail.calendar_grid import grid_days, month_start, month_weeks
from portal.webmail.import_progress import import_progress

VIEWS = ("month", "week", "day")
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


# the month, week and day views


def occurrence_url(placed: PlacedOccurrence) -> str:
    url = reverse("webmail:calendar_event", args=[placed.event.pk])
    rid = placed.occurrence.recurrence_id
    return f"{url}?occurrence={rid:{RID_FORMAT}}" if rid else url


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


@require_safe
@calendar_owner
def calendar_view(request, mailbox, calendar):
    zone = calendar_zone(calendar)
    view, day = _view_date(request, zone)
    context = {"view": view, "date": day, "hours": [f"{hour:02d}:00" for hour in range(24)],
               "weekday_names": [label for _, label in WEEKDAYS]}
    events = mailbox_events(mailbox=mailbox)  # every calendar of the mailbox, each event in its calendar's colour
    if view == "month":
        context.update(weeks=month_weeks(events, day, zone, link=occurrence_url), title=f"{month_start(day):%B %Y}",
                       previous=month_start(day, -1), next=month_start(day, 1))
    elif view == "week":
        monday = day - timedelta(days=day.weekday())
        sunday = monday + timedelta(days=6)
        days = grid_days(events, monday, 7, zone, grid=True, link=occurrence_url)
        same_month = monday.month == sunday.month
        context.update(days=days, previous=monday - timedelta(days=7), next=monday + timedelta(days=7),
                       title=(f"{monday.day} – {sunday:%-d %b %Y}" if same_month
                              else f"{monday:%-d %b} – {sunday:%-d %b %Y}"))
    else:
        days = grid_days(events, day, 1, zone, grid=True, link=occurrence_url)
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
    occurrence = occurrence_of(event, rid)
    if occurrence is None:
        raise Http404("No such occurrence.")
    return occurrence


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
    shown = occurrence or as_occurrence(event)
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
            changes["start"], changes["end"] = weekly_first(changes["start"], changes["end"],
                                                            form.cleaned_data["weekdays"], zone, changes["all_day"])
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
    shown = occurrence or as_occurrence(event)
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
                    data = form.cleaned_data
                    changes["start"], changes["end"] = series_times(
                        event=event, occurrence=occurrence, day=data["start_date"], at=data["start_time"],
                        all_day=data["all_day"], length=changes["end"] - changes["start"], zone=zone)
                changes["recurrence"] = _recurrence_of(form, current=event.recurrence)
                if form.cleaned_data["repeat"] == "weekly":
                    changes["start"], changes["end"] = weekly_first(
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
    shown = occurrence or as_occurrence(event)
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
    return import_progress(request, mailbox, job_id, kind=ImportJob.Kind.EVENTS, noun="event", app="calendar",
                           done_label="Show my calendar",
                           page=lambda context: _page(request, mailbox, calendar, "import_progress.html", context))


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
