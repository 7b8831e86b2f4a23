"""The owner's calendar in the webmail: the frame every calendar page shares (plan gate, zone, page),
the month, week and day views, .ics import and export, the calendar's settings and its read-only
feed; the event pages are portal.webmail.calendar_events. Every write goes through
calendars.services; every time is shown in the calendar's zone (Calendar.timezone, UTC while
empty). Plain links and forms; static/js/webmail-calendar.js only presets the zone from the browser
and tidies the event form."""
from datetime import UTC, date, datetime, timedelta
from functools import wraps

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone as django_timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from mailcore.accounts.selectors import plan_gate_message
from calendars import ical
from calendars.models import Calendar
from calendars.selectors import PlacedOccurrence, calendar_list, mailbox_events
from calendars.services import (
    EventInvalid,
    calendar_by_feed_token,
    calendar_export,
    calendar_for,
    calendar_update,
    feed_revoke,
    feed_token_create,
)
from imports.models import ImportJob
from imports.selectors import import_jobs_running
from imports.services import events_import_start
from portal.webmail.access import owner_required
from portal.webmail.calendar_forms import (
    FIRST_YEAR,
    LAST_YEAR,
    WEEKDAYS,
    CalendarSettingsForm,
    ImportForm,
    TimezonePresetForm,
)
from portal.webmail.calendar_grid import grid_days, month_start, month_weeks
from portal.webmail.import_progress import import_progress

VIEWS = ("month", "week", "day")
RID_FORMAT = "%Y%m%dT%H%M%SZ"  # ?occurrence=: the original start (UTC) of an occurrence of a series


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


def calendar_page(request, mailbox, calendar, template: str, context: dict, *, status: int = 200):
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
    return calendar_page(request, mailbox, calendar, "calendar.html", context)


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
    return calendar_page(request, mailbox, calendar, "import.html", {
        "form": form, "result": result,
        "running": import_jobs_running(mailbox=mailbox, kind=ImportJob.Kind.EVENTS)}, status=status)


@require_safe
@calendar_owner
def calendar_import_progress(request, mailbox, calendar, job_id: int):
    return import_progress(request, mailbox, job_id, kind=ImportJob.Kind.EVENTS, noun="event", app="calendar",
                           done_label="Show my calendar",
                           page=lambda context: calendar_page(request, mailbox, calendar, "import_progress.html", context))


@require_safe
@calendar_owner
def calendar_download(request, mailbox, calendar):
    response = HttpResponse(calendar_export(calendar=calendar), content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="calendar.ics"'
    return response


def _settings_page(request, mailbox, calendar, form, *, feed_url: str = "", status: int = 200):
    return calendar_page(request, mailbox, calendar, "settings.html",
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
