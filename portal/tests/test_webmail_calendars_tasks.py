"""Several calendars and the Tasks page in the webmail: a calendar made, renamed, recoloured and
deleted (not the default); an event put in a calendar and moved to another; the week showing each
event in its calendar's colour; tasks added, done, opened again and deleted; another mailbox's
calendars and tasks 404; bad input shown and nothing saved."""
import html
import re
from datetime import UTC, datetime

import pytest

from calendars.models import Calendar, CalendarEvent
from calendars.services import calendar_create, calendar_for, event_create, task_create
from portal.tests.conftest import WEBMAIL_PASSWORD
from testkit.factories import make_mailbox

pytestmark = pytest.mark.parametrize("webmail_owner", ["embedded"], indirect=True)


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


@pytest.fixture
def owner(client, webmail_owner):
    assert client.post("/webmail/", {"address": webmail_owner.address,
                                     "password": WEBMAIL_PASSWORD}).status_code == 302
    return client


@pytest.fixture
def default(webmail_owner):
    return calendar_for(account=webmail_owner.account, mailbox=webmail_owner)


def event_form(**fields) -> dict:
    data = {"title": "Standup", "start_date": "2026-12-07", "start_time": "09:00", "end_date": "2026-12-07",
            "end_time": "09:30", "repeat": "none", "interval": "1", "ends": "never", "color": ""}
    data.update(fields)
    return data


def test_a_calendar_is_made_renamed_recoloured_and_deleted_and_the_default_stays(owner, webmail_owner, default):
    made = owner.post("/webmail/calendar/calendars/", {"name": "Family", "color": "#DB2777", "holds": "both"})

    assert made.status_code == 302
    family = Calendar.objects.get(mailbox=webmail_owner, name="Family")
    assert (family.color, family.components, family.is_default) == ("#db2777", "VEVENT,VTODO", False)
    page = text(owner.get("/webmail/calendar/calendars/"))
    assert "“Family” added." in page and "My calendars Calendar Family" in page

    owner.post(f"/webmail/calendar/calendars/{family.pk}/", {"name": "Home", "color": "#16a34a"})
    family.refresh_from_db()
    assert (family.name, family.color) == ("Home", "#16a34a")

    confirm = text(owner.get(f"/webmail/calendar/calendars/{family.pk}/delete/"))
    assert "Delete the calendar “Home”?" in confirm
    owner.post(f"/webmail/calendar/calendars/{family.pk}/delete/")
    refused = owner.post(f"/webmail/calendar/calendars/{default.pk}/delete/", follow=True)
    assert "The default calendar cannot be deleted" in text(refused)
    assert list(Calendar.objects.filter(mailbox=webmail_owner).values_list("name", flat=True)) == ["Calendar"]


def test_a_bad_calendar_is_shown_and_nothing_is_made(owner, webmail_owner, default):
    response = owner.post("/webmail/calendar/calendars/", {"name": "", "color": "blue", "holds": "both"})

    assert response.status_code == 400
    assert "A colour is # and six hex digits" in text(response)
    assert Calendar.objects.filter(mailbox=webmail_owner).count() == 1


def test_an_event_goes_in_the_chosen_calendar_shows_in_its_colour_and_moves(owner, webmail_owner, default):
    work = calendar_create(account=webmail_owner.account, mailbox=webmail_owner, name="Work", color="#ea580c")
    calendar_create(account=webmail_owner.account, mailbox=webmail_owner, name="Chores", components=["VTODO"])
    form_page = owner.get("/webmail/calendar/events/new/").content.decode()
    choices = re.search(r'<select name="calendar"[^>]*>(.*?)</select>', form_page, re.S).group(1)
    assert re.findall(r">([^<]+)</option>", choices) == ["Calendar", "Work"]

    owner.post("/webmail/calendar/events/new/", event_form(calendar=str(work.pk)))

    event = CalendarEvent.objects.get(title="Standup")
    assert event.calendar == work
    week = owner.get("/webmail/calendar/?view=week&date=2026-12-07").content.decode()
    assert re.search(r'style="[^"]*--event-color: #ea580c[^"]*"[^>]*>.*?Standup', week, re.S)

    owner.post(f"/webmail/calendar/events/{event.pk}/edit/", event_form(calendar=str(default.pk)))
    event.refresh_from_db()
    assert event.calendar == default


def test_tasks_are_added_done_opened_again_and_deleted(owner, webmail_owner, default):
    added = owner.post("/webmail/calendar/tasks/", {"title": "Renew passport", "due": "2026-12-20"})

    assert added.status_code == 302
    task = CalendarEvent.objects.get(component="VTODO")
    assert (task.title, task.calendar, task.due, task.all_day) == (
        "Renew passport", default, datetime(2026, 12, 20, tzinfo=UTC), True)
    page = text(owner.get("/webmail/calendar/tasks/"))
    assert "To do 1 Renew passport Due Sun 20 Dec 2026" in page

    owner.post(f"/webmail/calendar/tasks/{task.pk}/done/")
    task.refresh_from_db()
    assert task.status == "COMPLETED" and "STATUS:COMPLETED" in task.ical
    assert "Done ✓ Renew passport" in text(owner.get("/webmail/calendar/tasks/"))
    owner.post(f"/webmail/calendar/tasks/{task.pk}/done/")
    task.refresh_from_db()
    assert task.status == "NEEDS-ACTION"

    owner.post(f"/webmail/calendar/tasks/{task.pk}/delete/")
    assert not CalendarEvent.objects.filter(component="VTODO").exists()
    assert "Nothing to do." in text(owner.get("/webmail/calendar/tasks/"))


def test_a_task_without_a_title_is_shown_and_nothing_is_made(owner, default):
    response = owner.post("/webmail/calendar/tasks/", {"title": "", "due": ""})

    assert response.status_code == 400
    assert "This field is required." in text(response)
    assert not CalendarEvent.objects.exists()


def test_tasks_are_not_on_the_calendar_and_events_are_not_tasks(owner, default):
    task_create(calendar=default, title="Buy milk", due=datetime(2026, 12, 7, tzinfo=UTC), due_date_only=True)
    event_create(calendar=default, title="Dentist", start=datetime(2026, 12, 7, 9, tzinfo=UTC),
                 end=datetime(2026, 12, 7, 10, tzinfo=UTC))

    week = text(owner.get("/webmail/calendar/?view=week&date=2026-12-07"))
    tasks = text(owner.get("/webmail/calendar/tasks/"))

    assert "Dentist" in week and "Buy milk" not in week
    assert "Buy milk" in tasks and "Dentist" not in tasks


def test_another_mailboxs_calendars_and_tasks_are_404_and_stay(owner, charlie):
    stranger = make_mailbox(charlie.account, "carl@charlie.test", password=WEBMAIL_PASSWORD)
    theirs = calendar_create(account=charlie.account, mailbox=stranger, name="Secret")
    task = task_create(calendar=theirs, title="Hidden")

    answers = [owner.post(f"/webmail/calendar/calendars/{theirs.pk}/", {"name": "Mine", "color": "#000000"}),
               owner.get(f"/webmail/calendar/calendars/{theirs.pk}/delete/"),
               owner.post(f"/webmail/calendar/calendars/{theirs.pk}/delete/"),
               owner.post(f"/webmail/calendar/tasks/{task.pk}/done/"),
               owner.post(f"/webmail/calendar/tasks/{task.pk}/delete/"),
               owner.post("/webmail/calendar/tasks/", {"title": "x", "calendar": str(theirs.pk)})]

    assert [answer.status_code for answer in answers[:5]] == [404, 404, 404, 404, 404]
    theirs.refresh_from_db()
    task.refresh_from_db()
    assert (theirs.name, task.status) == ("Secret", "NEEDS-ACTION")
    assert not CalendarEvent.objects.filter(title="x", calendar=theirs).exists()
    assert "Secret" not in text(owner.get("/webmail/calendar/calendars/"))
