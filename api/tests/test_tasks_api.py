"""/calendar/tasks: tasks made, listed, completed, moved and deleted over REST, as VTODO resources
its mailbox's sync clients get; field rules; the stranger rule."""
import pytest

from calendars.models import Calendar, CalendarEvent
from testkit.clients import login_client
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def dora_api(db):
    dora = UserFactory(email="dora@example.test", account__plan_code="premium")
    make_mailbox(dora.account, "dora@elsewhere.test")
    return login_client(dora)


def test_create_fetch_complete_reopen_and_delete_a_task(alice_api, ann):
    made = alice_api.post("/calendar/tasks", {"title": "Send invoices", "due": "2031-03-01", "priority": 1,
                                              "description": "All of March", "mailbox": ann.address}, format="json")

    assert made.status_code == 201, made.json()
    task = made.json()
    assert set(task) == {"id", "uid", "title", "description", "due", "priority", "completed", "completed_at", "status",
                         "calendar_id", "mailbox", "created_at", "updated_at"}
    assert {key: task[key] for key in ("title", "description", "due", "priority", "completed", "completed_at",
                                       "status", "mailbox")} == {
        "title": "Send invoices", "description": "All of March", "due": "2031-03-01", "priority": 1,
        "completed": False, "completed_at": None, "status": "NEEDS-ACTION", "mailbox": "ann@example.test"}
    stored = CalendarEvent.objects.get(pk=task["id"])
    assert (stored.component, stored.calendar.is_default, stored.calendar.mailbox) == ("VTODO", True, ann)
    assert "BEGIN:VTODO" in stored.ical and "DUE;VALUE=DATE:20310301" in stored.ical
    assert alice_api.get(f"/calendar/tasks/{task['id']}").json() == task

    done = alice_api.patch(f"/calendar/tasks/{task['id']}", {"completed": True}, format="json").json()
    assert (done["completed"], done["status"]) == (True, "COMPLETED") and done["completed_at"]
    stored.refresh_from_db()
    assert "STATUS:COMPLETED" in stored.ical and "COMPLETED:" in stored.ical and "PERCENT-COMPLETE:100" in stored.ical
    reopened = alice_api.patch(f"/calendar/tasks/{task['id']}",
                               {"completed": False, "due": "2031-03-05T17:00:00+01:00"}, format="json").json()
    assert (reopened["completed"], reopened["completed_at"], reopened["due"]) == (False, None, "2031-03-05T16:00:00Z")

    assert alice_api.delete(f"/calendar/tasks/{task['id']}").status_code == 204
    assert alice_api.get(f"/calendar/tasks/{task['id']}").status_code == 404
    assert not CalendarEvent.objects.exists()


def test_a_client_added_alarm_survives_a_change_made_over_rest(alice_api, ann):
    task = alice_api.post("/calendar/tasks", {"title": "Call", "mailbox": ann.address}, format="json").json()
    stored = CalendarEvent.objects.get(pk=task["id"])
    stored.ical = stored.ical.replace("END:VTODO", "BEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT15M\r\n"
                                      "DESCRIPTION:Call\r\nEND:VALARM\r\nEND:VTODO")
    stored.save()

    alice_api.patch(f"/calendar/tasks/{task['id']}", {"title": "Call back"}, format="json")

    stored.refresh_from_db()
    assert "TRIGGER:-PT15M" in stored.ical and "SUMMARY:Call back" in stored.ical


def test_tasks_list_open_first_by_due_and_filter_by_state_and_calendar(alice_api, ann):
    errands = alice_api.post("/calendar/calendars", {"name": "Errands", "components": ["VTODO"],
                                                     "mailbox": ann.address}, format="json").json()
    for title, due, calendar in (("later", "2031-05-01", None), ("sooner", "2031-04-01", None),
                                 ("whenever", None, None), ("milk", "2031-01-01", errands["id"])):
        body = {"title": title, **({"due": due} if due else {}),
                **({"calendar_id": calendar} if calendar else {"mailbox": ann.address})}
        assert alice_api.post("/calendar/tasks", body, format="json").status_code == 201
    done = alice_api.post("/calendar/tasks", {"title": "done", "completed": True, "mailbox": ann.address},
                          format="json").json()

    def titles(**query):
        return [task["title"] for task in alice_api.get("/calendar/tasks", query).json()["tasks"]]

    assert titles() == ["milk", "sooner", "later", "whenever", "done"]
    assert titles(completed="false") == ["milk", "sooner", "later", "whenever"]
    assert titles(completed="true") == ["done"]
    assert titles(calendar_id=errands["id"]) == ["milk"]
    assert done["completed"] is True
    assert [item["title"] for item in alice_api.get("/calendar").json()["events"]] == []  # tasks are not events


@pytest.mark.parametrize("body, field", [
    ({}, "title"), ({"title": ""}, "title"), ({"title": "t", "priority": 10}, "priority"),
    ({"title": "t", "priority": "1"}, "priority"), ({"title": "t", "due": "soon"}, "due"),
    ({"title": "t", "completed": "yes"}, "completed"), ({"title": "t", "status": "COMPLETED"}, "status"),
    ({"title": "t", "mailbox": "nobody@example.test"}, "mailbox"),
    ({"title": "t", "calendar_id": 999999}, "calendar_id"),
])
def test_a_bad_task_is_422_and_nothing_is_made(alice_api, ann, body, field):
    response = alice_api.post("/calendar/tasks", body, format="json")

    assert response.status_code == 422 and field in response.json()["errors"], response.json()
    assert not CalendarEvent.objects.exists()


def test_a_task_cannot_go_into_a_calendar_of_events_only(alice_api, ann):
    meetings = alice_api.post("/calendar/calendars", {"name": "Meetings", "components": ["VEVENT"],
                                                      "mailbox": ann.address}, format="json").json()

    response = alice_api.post("/calendar/tasks", {"title": "t", "calendar_id": meetings["id"]}, format="json")

    assert response.status_code == 422
    assert response.json()["errors"] == {"calendar_id": ["That calendar holds events only."]}
    assert not CalendarEvent.objects.exists()


def test_a_task_moves_to_another_list_of_its_mailbox(alice_api, ann):
    errands = alice_api.post("/calendar/calendars", {"name": "Errands", "components": ["VTODO"],
                                                     "mailbox": ann.address}, format="json").json()
    task = alice_api.post("/calendar/tasks", {"title": "Milk", "mailbox": ann.address}, format="json").json()

    moved = alice_api.patch(f"/calendar/tasks/{task['id']}", {"calendar_id": errands["id"]}, format="json")

    assert moved.status_code == 200 and moved.json()["calendar_id"] == errands["id"]
    assert CalendarEvent.objects.get(pk=task["id"]).calendar == Calendar.objects.get(pk=errands["id"])


def test_a_stranger_gets_404_for_anothers_tasks(alice_api, dora_api, ann):
    task = alice_api.post("/calendar/tasks", {"title": "Secret", "mailbox": ann.address}, format="json").json()

    answers = [dora_api.get(f"/calendar/tasks/{task['id']}").status_code,
               dora_api.patch(f"/calendar/tasks/{task['id']}", {"completed": True}, format="json").status_code,
               dora_api.delete(f"/calendar/tasks/{task['id']}").status_code]

    assert answers == [404, 404, 404]
    assert dora_api.get("/calendar/tasks").json()["tasks"] == []
    assert CalendarEvent.objects.get(pk=task["id"]).status == "NEEDS-ACTION"


def test_an_event_is_not_a_task_and_a_task_is_not_an_event(alice_api, ann):
    event = alice_api.post("/calendar", {"title": "Meeting", "start": "2031-03-03T09:00:00Z",
                                         "end": "2031-03-03T10:00:00Z"}, format="json").json()
    task = alice_api.post("/calendar/tasks", {"title": "Todo"}, format="json").json()

    assert alice_api.get(f"/calendar/tasks/{event['id']}").status_code == 404
    assert alice_api.get(f"/calendar/{task['id']}").status_code == 404
