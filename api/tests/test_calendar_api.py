"""/calendar: list by range (overlaps and series included) with paging, create, fetch, PATCH,
delete; plan gate, scopes, field rules, the stranger rule and a mailbox's own calendar."""
import pytest

from calendars.models import Calendar, CalendarEvent
from testkit.clients import key_client, login_client
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db

MEETING = {"title": "Planning", "start": "2026-05-04T09:00:00Z", "end": "2026-05-04T10:00:00Z"}


def create(client, **fields):
    return client.post("/calendar", {**MEETING, **fields}, format="json")


@pytest.fixture
def dora_api(db):
    """A stranger on the Premium plan: the plan gate lets her through, so only the stranger rule stops her."""
    return login_client(UserFactory(email="dora@example.test", account__plan_code="premium"))


def test_create_fetch_update_delete(alice_api, alice):
    created = create(alice_api, description="Quarterly", location="Room 1", color="#1A73E8",
                     attendees=["Bert@Example.com"])
    assert created.status_code == 201, created.json()
    event = created.json()
    assert set(event) == {"id", "uid", "title", "start", "end", "all_day", "description", "location", "color",
                          "attendees", "attendee_status", "organizer", "recurrence", "timezone", "sequence",
                          "mailbox", "calendar_id", "created_at", "updated_at"}
    assert {key: event[key] for key in ("title", "start", "end", "all_day", "description", "location", "color",
                                        "attendees", "attendee_status", "recurrence", "timezone", "mailbox")} == {
        "title": "Planning", "start": "2026-05-04T09:00:00Z", "end": "2026-05-04T10:00:00Z", "all_day": False,
        "description": "Quarterly", "location": "Room 1", "color": "#1a73e8", "attendees": ["bert@example.com"],
        "attendee_status": {"bert@example.com": "NEEDS-ACTION"}, "recurrence": "", "timezone": "", "mailbox": None}
    stored = CalendarEvent.objects.get()
    assert stored.calendar == Calendar.objects.get(account=alice.account, mailbox=None)
    assert "SUMMARY:Planning" in stored.ical and stored.uid == event["uid"]
    assert alice_api.get(f"/calendar/{event['id']}").json() == event

    etag, sequence = stored.etag, event["sequence"]
    patched = alice_api.patch(f"/calendar/{event['id']}", {"title": "Planning (moved)", "end": "2026-05-04T11:00:00Z"},
                              format="json")
    assert patched.status_code == 200, patched.json()
    assert (patched.json()["title"], patched.json()["end"], patched.json()["location"]) == (
        "Planning (moved)", "2026-05-04T11:00:00Z", "Room 1")
    assert patched.json()["sequence"] == sequence + 1
    stored.refresh_from_db()
    assert "SUMMARY:Planning (moved)" in stored.ical
    assert stored.etag != etag

    assert alice_api.delete(f"/calendar/{event['id']}").status_code == 204
    assert alice_api.get(f"/calendar/{event['id']}").status_code == 404
    assert CalendarEvent.objects.count() == 0


def test_times_take_offsets_and_a_time_without_one_is_utc(alice_api):
    offset = create(alice_api, start="2026-05-04T11:00:00+02:00", end="2026-05-04T12:30:00+02:00").json()
    assert (offset["start"], offset["end"]) == ("2026-05-04T09:00:00Z", "2026-05-04T10:30:00Z")
    naive = create(alice_api, start="2026-05-04T09:00:00", end="2026-05-04T10:00:00").json()
    assert (naive["start"], naive["end"]) == ("2026-05-04T09:00:00Z", "2026-05-04T10:00:00Z")


def test_an_all_day_event_covers_whole_days(alice_api):
    event = create(alice_api, title="Holiday", all_day=True, start="2026-05-04T00:00:00Z",
                   end="2026-05-06T00:00:00Z").json()
    assert (event["all_day"], event["start"], event["end"]) == (True, "2026-05-04T00:00:00Z", "2026-05-06T00:00:00Z")
    assert "DTSTART;VALUE=DATE:20260504" in CalendarEvent.objects.get().ical


def test_a_series_and_its_zone_are_kept(alice_api):
    event = create(alice_api, recurrence="RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10", timezone="Europe/Berlin").json()
    assert (event["recurrence"], event["timezone"]) == ("FREQ=WEEKLY;COUNT=10;BYDAY=MO,WE", "Europe/Berlin")
    assert "RRULE:FREQ=WEEKLY;COUNT=10;BYDAY=MO,WE" in CalendarEvent.objects.get().ical


@pytest.mark.parametrize("fields, field", [
    ({"title": ""}, "title"),
    ({"title": None}, "title"),
    ({"title": "x" * 256}, "title"),
    ({"start": "tomorrow"}, "start"),
    ({"start": 1777885200}, "start"),
    ({"end": "2026-05-04T08:59:59Z"}, "end"),
    ({"all_day": "yes"}, "all_day"),
    ({"color": "blue"}, "color"),
    ({"color": "#12345"}, "color"),
    ({"color": "#1234567"}, "color"),
    ({"color": "#gggggg"}, "color"),
    ({"attendees": ["bert@example.com", "not an address"]}, "attendees"),
    ({"attendees": "bert@example.com"}, "attendees"),
    ({"attendees": [f"a{n}@example.com" for n in range(101)]}, "attendees"),
    ({"recurrence": "hello"}, "recurrence"),
    ({"recurrence": "FREQ=WEEKLY;BYDAY=XX"}, "recurrence"),
    ({"recurrence": "FREQ=DAILY;COUNT=0"}, "recurrence"),
    ({"recurrence": "FREQ=DAILY;UNTIL=20200101T000000Z"}, "recurrence"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"timezone": "../../etc/passwd"}, "timezone"),
    ({"description": "x" * 10_001}, "description"),
    ({"mailbox": "nobody@example.test"}, "mailbox"),
    ({"organizer": "me@example.com"}, "organizer"),
    ({"priority": 1}, "priority"),
])
def test_bad_input_is_422_and_creates_nothing(alice_api, fields, field):
    response = create(alice_api, **fields)
    assert response.status_code == 422
    body = response.json()
    assert field in body["errors"] and body["detail"].startswith("Validation failed")
    assert CalendarEvent.objects.count() == 0


@pytest.mark.parametrize("missing", ["title", "start", "end"])
def test_title_start_and_end_are_required(alice_api, missing):
    response = alice_api.post("/calendar", {k: v for k, v in MEETING.items() if k != missing}, format="json")
    assert response.status_code == 422 and missing in response.json()["errors"]
    assert CalendarEvent.objects.count() == 0


@pytest.mark.parametrize("fields, field", [
    ({"end": "2026-05-04T08:00:00Z"}, "end"),  # before the start it has
    ({"start": "2026-05-04T12:00:00Z"}, "end"),  # after the end it has
    ({"color": "red"}, "color"),
    ({"attendees": ["nope"]}, "attendees"),
    ({"recurrence": "FREQ=SOMETIMES"}, "recurrence"),
    ({"mailbox": "ann@example.test"}, "mailbox"),
    ({"uid": "mine"}, "uid"),
])
def test_a_bad_patch_is_422_and_changes_nothing(alice_api, fields, field):
    event = create(alice_api).json()
    before = CalendarEvent.objects.get()
    response = alice_api.patch(f"/calendar/{event['id']}", fields, format="json")
    assert response.status_code == 422 and field in response.json()["errors"]
    after = CalendarEvent.objects.get()
    assert (after.start, after.end, after.color, after.etag, after.sequence, after.calendar_id) == (
        before.start, before.end, before.color, before.etag, before.sequence, before.calendar_id)


def test_a_free_plan_gets_403_naming_the_plan(charlie_api):
    for method, path in (("get", "/calendar"), ("post", "/calendar"), ("get", "/calendar/1"),
                         ("patch", "/calendar/1"), ("delete", "/calendar/1")):
        response = getattr(charlie_api, method)(path, MEETING, format="json")
        assert response.status_code == 403, (method, path)
        assert response.json() == {
            "detail": "Calendar needs the Pro plan or a higher plan; your plan does not include it."}
    assert CalendarEvent.objects.count() == 0


def test_the_pro_plan_has_the_calendar(db):
    assert create(login_client(UserFactory(account__plan_code="pro"))).status_code == 201


def test_keys_need_calendar_read_to_list_and_calendar_write_to_change(alice):
    event = create(login_client(alice)).json()
    reader = key_client(alice, ["calendar:read"])
    assert reader.get("/calendar").json()["total"] == 1
    assert reader.get(f"/calendar/{event['id']}").status_code == 200
    for response in (create(reader), reader.patch(f"/calendar/{event['id']}", {"title": "X"}, format="json"),
                     reader.delete(f"/calendar/{event['id']}")):
        assert response.status_code == 403
        assert response.json() == {"detail": "This API key lacks the 'calendar:write' scope."}
    contacts_only = key_client(alice, ["contacts:read", "contacts:write"])
    for response in (contacts_only.get("/calendar"), contacts_only.get(f"/calendar/{event['id']}"),
                     contacts_only.head("/calendar")):
        assert response.status_code == 403
    assert contacts_only.get("/calendar").json() == {"detail": "This API key lacks the 'calendar:read' scope."}
    writer = key_client(alice, ["calendar:write"])
    assert create(writer).status_code == 201
    assert writer.patch(f"/calendar/{event['id']}", {"title": "Renamed"}, format="json").status_code == 200
    assert writer.delete(f"/calendar/{event['id']}").status_code == 204
    assert list(CalendarEvent.objects.values_list("title", flat=True)) == ["Planning"]


def test_the_calendar_scopes_can_be_given_to_a_key(alice_api):
    response = alice_api.post("/api-keys", {"name": "calendar", "scopes": ["calendar:read", "calendar:write"]},
                              format="json")
    assert response.status_code == 201
    assert response.json()["scopes"] == ["calendar:read", "calendar:write"]


def test_another_accounts_event_is_404_and_unchanged(alice_api, dora_api):
    event = create(alice_api).json()
    for method in ("get", "patch", "delete"):
        response = getattr(dora_api, method)(f"/calendar/{event['id']}", {"title": "Mine now"}, format="json")
        assert response.status_code == 404
        assert set(response.json()) == {"detail"}
    assert dora_api.get("/calendar").json()["total"] == 0
    stored = CalendarEvent.objects.get()
    assert (stored.title, stored.sequence) == ("Planning", 0)


def test_the_list_is_paged_by_start(alice_api):
    for day in (5, 3, 1, 4, 2):
        create(alice_api, title=f"Day {day}", start=f"2026-06-0{day}T09:00:00Z", end=f"2026-06-0{day}T10:00:00Z")
    page = alice_api.get("/calendar", {"page": 2, "per_page": 2}).json()
    assert (page["total"], page["page"], page["per_page"]) == (5, 2, 2)
    assert [e["title"] for e in page["events"]] == ["Day 3", "Day 4"]
    assert alice_api.get("/calendar", {"page": 9}).json()["events"] == []
    assert alice_api.get("/calendar", {"per_page": 101}).status_code == 422


@pytest.fixture
def may(alice_api):
    """Events around the first week of May 2026 (1 May is a Friday, 4 May a Monday)."""
    events = {
        "friday": create(alice_api, title="friday", start="2026-05-01T09:00:00Z", end="2026-05-01T10:00:00Z"),
        "overnight": create(alice_api, title="overnight", start="2026-04-30T22:00:00Z", end="2026-05-02T08:00:00Z"),
        "later": create(alice_api, title="later", start="2026-05-10T09:00:00Z", end="2026-05-10T10:00:00Z"),
        "mondays": create(alice_api, title="mondays", start="2026-04-06T08:00:00Z", end="2026-04-06T08:30:00Z",
                          recurrence="FREQ=WEEKLY;BYDAY=MO;COUNT=10"),
        "march": create(alice_api, title="march", start="2026-03-02T08:00:00Z", end="2026-03-02T08:30:00Z",
                        recurrence="FREQ=DAILY;COUNT=3"),
        "daily": create(alice_api, title="daily", start="2025-01-01T07:00:00Z", end="2025-01-01T07:15:00Z",
                        recurrence="FREQ=DAILY"),
    }
    assert all(response.status_code == 201 for response in events.values())
    return events


def titles(client, **query):
    response = client.get("/calendar", query)
    assert response.status_code == 200, response.json()
    return sorted(event["title"] for event in response.json()["events"])


def test_from_and_to_list_every_event_overlapping_the_range(alice_api, may):
    # 1 May as a date: the whole day (UTC); the overnight event began before and is still going.
    assert titles(alice_api, **{"from": "2026-05-01", "to": "2026-05-01"}) == ["daily", "friday", "overnight"]
    # Tue 5 May to Sun 10 May: the Monday series overlaps as a span, but has no occurrence inside.
    assert titles(alice_api, **{"from": "2026-05-05", "to": "2026-05-09"}) == ["daily"]
    # Monday 11 May has an occurrence of the series.
    assert titles(alice_api, **{"from": "2026-05-11", "to": "2026-05-11"}) == ["daily", "mondays"]
    # After the Monday series' tenth occurrence (8 June) it is gone.
    assert titles(alice_api, **{"from": "2026-06-09", "to": "2026-06-30"}) == ["daily"]
    assert titles(alice_api, **{"from": "2026-03-01", "to": "2026-03-31"}) == ["daily", "march"]
    assert titles(alice_api, **{"from": "2024-01-01", "to": "2024-12-31"}) == []


def test_a_datetime_to_is_exclusive_and_a_datetime_from_takes_events_still_going(alice_api, may):
    assert titles(alice_api, **{"from": "2026-05-01T08:00:00Z", "to": "2026-05-01T09:00:00Z"}) == ["overnight"]
    assert titles(alice_api, **{"from": "2026-05-01T09:30:00+00:00", "to": "2026-05-01T12:30:00+02:00"}) == [
        "friday", "overnight"]
    assert titles(alice_api, **{"from": "2026-05-01T09:30:00", "to": "2026-05-01T09:45:00"}) == ["friday", "overnight"]


def test_one_bound_alone_is_open_on_the_other_side(alice_api, may):
    assert titles(alice_api, **{"from": "2026-05-02"}) == ["daily", "later", "mondays", "overnight"]
    assert titles(alice_api, to="2026-04-05") == ["daily", "march"]
    assert titles(alice_api, to="2026-04-06") == ["daily", "march", "mondays"]
    assert alice_api.get("/calendar").json()["total"] == 6


def test_a_long_range_over_an_endless_series_answers(alice_api, may):
    assert titles(alice_api, **{"from": "2030-01-01", "to": "2130-01-01"}) == ["daily"]


@pytest.mark.parametrize("query, field", [({"from": "2026-05-02", "to": "2026-05-01"}, "from"),
                                          ({"from": "yesterday"}, "from"), ({"to": "2026-13-01"}, "to"),
                                          ({"mailbox": "nobody@example.test"}, "mailbox")])
def test_a_bad_range_is_422(alice_api, query, field):
    response = alice_api.get("/calendar", query)
    assert response.status_code == 422 and field in response.json()["errors"]


def test_an_event_can_go_to_a_mailboxes_calendar_and_be_listed_by_it(alice_api, alice, ann):
    Calendar.objects.create(account=alice.account, mailbox=ann, timezone="Europe/Berlin", slug="calendar",
                            is_default=True)
    created = create(alice_api, title="Ann's", mailbox="Ann@Example.test", attendees=["bert@example.com"])
    assert created.status_code == 201, created.json()
    event = created.json()
    assert (event["mailbox"], event["organizer"], event["timezone"]) == ("ann@example.test", "ann@example.test",
                                                                         "Europe/Berlin")
    stored = CalendarEvent.objects.get(pk=event["id"])
    assert stored.calendar == Calendar.objects.get(mailbox=ann)
    assert "ORGANIZER:mailto:ann@example.test" in stored.ical
    create(alice_api, title="Account's")
    assert titles(alice_api) == ["Account's", "Ann's"]
    assert titles(alice_api, mailbox="ann@example.test") == ["Ann's"]
    patched = alice_api.patch(f"/calendar/{event['id']}", {"location": "Berlin"}, format="json").json()
    assert (patched["location"], patched["mailbox"]) == ("Berlin", "ann@example.test")


def test_another_accounts_mailbox_is_refused(alice_api):
    dora = UserFactory(account__plan_code="premium")
    make_mailbox(dora.account, "dora@elsewhere.test")
    response = create(alice_api, mailbox="dora@elsewhere.test")
    assert response.status_code == 422 and "mailbox" in response.json()["errors"]
    assert CalendarEvent.objects.count() == 0 and Calendar.objects.count() == 0


def test_an_empty_patch_changes_nothing(alice_api):
    event = create(alice_api, attendees=["bert@example.com"]).json()
    before = CalendarEvent.objects.get()
    response = alice_api.patch(f"/calendar/{event['id']}", {}, format="json")
    assert response.status_code == 200 and response.json()["sequence"] == 0
    after = CalendarEvent.objects.get()
    assert (after.etag, after.sequence, after.calendar.revision) == (before.etag, 0, before.calendar.revision)


def test_a_date_alone_as_start_is_its_midnight_utc(alice_api):
    event = create(alice_api, title="Trip", all_day=True, start="2026-05-04", end="2026-05-05").json()
    assert (event["start"], event["end"]) == ("2026-05-04T00:00:00Z", "2026-05-05T00:00:00Z")


def test_huge_numbers_in_the_path_and_page_are_answered_plainly(alice_api):
    for method in ("get", "patch", "delete"):
        assert getattr(alice_api, method)("/calendar/99999999999999999999", {}, format="json").status_code == 404
    response = alice_api.get("/calendar", {"page": 99999999999999999999})
    assert response.status_code == 422 and "page" in response.json()["errors"]
