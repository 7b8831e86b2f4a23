"""The event pages of the webmail calendar: one event, or one occurrence of a series or the whole
series, shown, made, changed or deleted. Recurrence rules are calendars.recurrence's; the
frame (plan gate, zone, page) and the `?occurrence=` format are portal.webmail.calendar_pages'."""
from datetime import UTC, date, datetime, time, timedelta

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from calendars import ical
from calendars.models import CalendarEvent
from calendars.recurrence import as_occurrence, occurrence_of, series_times, weekly_first
from calendars.selectors import calendar_list, mailbox_event_get
from calendars.services import (
    EventConflict,
    EventInvalid,
    event_create,
    event_delete,
    event_move,
    event_update,
)
from portal.webmail.calendar_forms import (
    FIRST_YEAR,
    LAST_YEAR,
    SWATCHES,
    WEEKDAYS,
    EventForm,
    event_initial,
    recurrence_build,
    recurrence_parse,
    recurrence_text,
)
from portal.webmail.calendar_pages import RID_FORMAT, calendar_page, calendar_owner, calendar_zone

STATUS_WORDS = {"NEEDS-ACTION": "No answer yet", "ACCEPTED": "Accepted", "DECLINED": "Declined",
                "TENTATIVE": "Maybe", "DELEGATED": "Delegated"}


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
    return calendar_page(request, mailbox, calendar, "event.html", {
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
    return calendar_page(request, mailbox, calendar, "event_form.html", {
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
    return calendar_page(request, mailbox, calendar, "event_delete.html", {
        "event": event, "occurrence": occurrence, "shown": shown, "when": when_text(shown, zone),
        "cancel_url": reverse("webmail:calendar_event", args=[event.pk]) + rid,
        "action": reverse("webmail:calendar_event_delete", args=[event.pk]) + rid})
