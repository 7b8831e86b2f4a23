"""The owner's calendars and tasks in the webmail: make, rename, recolour and delete calendars (the
same collections phones sync over CalDAV), and a simple Tasks page (list, add, complete, delete)
over the calendars that hold tasks. Every write goes through calendars.services."""
from datetime import UTC, date, datetime, time

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from calendars.models import Calendar, CalendarEvent
from calendars.selectors import calendar_list, task_list
from calendars.services import (
    CalendarRefused,
    CalendarTaken,
    EventInvalid,
    calendar_create,
    calendar_delete,
    calendar_update,
    event_delete,
    task_create,
    task_update,
)
from portal.webmail.calendar_forms import SWATCHES, CalendarForm, TaskForm
from portal.webmail.calendar_pages import calendar_page, calendar_owner


def _own_calendar(mailbox, calendar_id: int) -> Calendar:
    calendar = calendar_list(account=mailbox.account, mailbox=mailbox).filter(pk=calendar_id).first()
    if calendar is None:
        raise Http404("No such calendar.")
    return calendar


def _calendars_page(request, mailbox, calendar, form, *, status=200):
    return calendar_page(request, mailbox, calendar, "calendars.html", {"form": form, "swatches": SWATCHES}, status=status)


@require_http_methods(["GET", "POST"])
@calendar_owner
def calendars_manage(request, mailbox, calendar):
    form = CalendarForm(request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                made = calendar_create(account=mailbox.account, mailbox=mailbox, name=form.cleaned_data["name"],
                                       color=form.cleaned_data["color"], components=form.components())
            except (EventInvalid, CalendarRefused, CalendarTaken) as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(request, f"“{made.name}” added. Your phone and desktop apps show it at their "
                                          "next sync.")
                return redirect("webmail:calendar_calendars")
        return _calendars_page(request, mailbox, calendar, form, status=400)
    return _calendars_page(request, mailbox, calendar, form)


@require_POST
@calendar_owner
def calendar_change(request, mailbox, calendar, calendar_id: int):
    target = _own_calendar(mailbox, calendar_id)
    form = CalendarForm(request.POST, renaming=True)
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return redirect("webmail:calendar_calendars")
    calendar_update(calendar=target, name=form.cleaned_data["name"], color=form.cleaned_data["color"])
    messages.success(request, f"“{target.name}” saved.")
    return redirect("webmail:calendar_calendars")


@require_http_methods(["GET", "POST"])
@calendar_owner
def calendar_remove(request, mailbox, calendar, calendar_id: int):
    target = _own_calendar(mailbox, calendar_id)
    if request.method == "POST":
        try:
            calendar_delete(calendar=target)
        except CalendarRefused as exc:
            messages.error(request, exc.detail)
        else:
            messages.success(request, f"“{target.name}” and everything in it deleted.")
        return redirect("webmail:calendar_calendars")
    return calendar_page(request, mailbox, calendar, "calendar_delete.html", {
        "target": target, "count": target.events.count(), "tasks": target.events.filter(component="VTODO").count()})


def _task_lists(mailbox) -> list[Calendar]:
    return [each for each in calendar_list(account=mailbox.account, mailbox=mailbox)
            if each.holds(CalendarEvent.Component.TASK)]


@require_http_methods(["GET", "POST"])
@calendar_owner
def tasks_view(request, mailbox, calendar):
    lists = _task_lists(mailbox)
    form = TaskForm(request.POST or None, calendars=lists)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            due = data["due"]
            try:
                task = task_create(calendar=form.chosen_calendar(lists[0] if lists else calendar), title=data["title"],
                                   due=None if due is None else _midnight(due), due_date_only=due is not None)
            except EventInvalid as exc:
                form.add_error(None, exc.detail)
            else:
                messages.success(request, f"“{task.title}” added.")
                return redirect("webmail:calendar_tasks")
    tasks = task_list(account=mailbox.account, mailbox=mailbox).select_related("calendar")
    return calendar_page(request, mailbox, calendar, "tasks.html", {
        "form": form, "lists": lists,
        "open_tasks": [task for task in tasks if task.status != "COMPLETED"],
        "done_tasks": [task for task in tasks if task.status == "COMPLETED"][:50]}, status=status)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def _own_task(mailbox, task_id: int) -> CalendarEvent:
    task = task_list(account=mailbox.account, mailbox=mailbox).filter(pk=task_id).first()
    if task is None:
        raise Http404("No such task.")
    return task


@require_POST
@calendar_owner
def task_toggle(request, mailbox, calendar, task_id: int):
    task = _own_task(mailbox, task_id)
    done = task.status != "COMPLETED"
    task_update(task=task, completed=done)
    messages.success(request, f"“{task.title}” {'done' if done else 'open again'}.")
    return redirect("webmail:calendar_tasks")


@require_POST
@calendar_owner
def task_remove(request, mailbox, calendar, task_id: int):
    task = _own_task(mailbox, task_id)
    event_delete(event=task)
    messages.success(request, f"“{task.title}” deleted.")
    return redirect("webmail:calendar_tasks")
