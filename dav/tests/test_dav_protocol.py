"""CalDAV as a real client library (caldav) sees it against the running server: discovery from the
DAV root and from /.well-known/caldav, events saved, found by date range, read by URL, edited with
their ETag and deleted, and sync-collection seeing changes made through mailcore's services (the
REST API's and the webmail's path)."""
from datetime import UTC, datetime

import caldav
import pytest
from caldav.lib import error

from dav.tests.conftest import ANN, PASSWORD
from calendars.models import CalendarEvent
from calendars.services import calendar_for, event_create, event_delete, event_update

pytestmark = pytest.mark.django_db(transaction=True)


def at(day: int, hour: int = 9, month: int = 3) -> datetime:
    return datetime(2031, month, day, hour, tzinfo=UTC)


def weekly_standup() -> str:
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VEVENT\r\nUID:standup-1\r\n"
            "DTSTAMP:20310101T000000Z\r\nDTSTART:20310103T090000Z\r\nDTEND:20310103T093000Z\r\n"
            "RRULE:FREQ=WEEKLY;COUNT=20\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


@pytest.fixture
def client(dav_url, ann):
    with caldav.DAVClient(url=dav_url, username=ANN, password=PASSWORD) as dav_client:
        yield dav_client


@pytest.fixture
def calendar(client):
    return client.principal().calendars()[0]


def test_a_client_finds_the_mailboxs_calendar_from_the_dav_root(client, ann, live_server):
    principal = client.principal()

    assert str(principal.url) == f"{live_server.url}/dav/principals/ann@example.test/"
    assert principal.get_display_name() == "Ann Example"
    calendars = principal.calendars()
    assert [str(c.url) for c in calendars] == [f"{live_server.url}/dav/calendars/ann@example.test/calendar/"]
    assert calendars[0].get_display_name() == "Calendar"
    assert [str(address) for address in principal.calendar_user_address_set()] == ["mailto:ann@example.test"]


def test_a_client_given_only_the_well_known_address_finds_the_same_calendar(live_server, ann):
    with caldav.DAVClient(url=f"{live_server.url}/.well-known/caldav", username=ANN, password=PASSWORD) as client:
        calendars = client.principal().calendars()

    assert [str(c.url) for c in calendars] == [f"{live_server.url}/dav/calendars/ann@example.test/calendar/"]


def test_an_event_saved_by_a_client_is_stored_once_and_found_by_its_date_range(calendar, ann):
    saved = calendar.save_event(dtstart=at(5, 10), dtend=at(5, 11), summary="Dentist", uid="dentist-1")

    stored = CalendarEvent.objects.get(calendar__mailbox=ann)
    assert (stored.uid, stored.title, stored.start, stored.end) == ("dentist-1", "Dentist", at(5, 10), at(5, 11))
    assert str(saved.url).endswith(f"/dav/calendars/ann@example.test/calendar/{stored.href}")
    found = calendar.search(start=at(1), end=at(10), event=True)
    assert [event.icalendar_component["UID"] for event in found] == ["dentist-1"]
    assert calendar.search(start=at(6), end=at(10), event=True) == []


def test_a_weekly_series_is_found_in_a_range_where_only_a_later_occurrence_falls(calendar):
    calendar.save_event(weekly_standup())
    calendar.save_event(dtstart=at(1, 8, month=1), dtend=at(1, 9, month=1), summary="New year", uid="ny")

    in_march = calendar.search(start=at(6), end=at(8), event=True)  # Friday 7 March
    between_occurrences = calendar.search(start=at(4, 12, month=1), end=at(9, 12, month=1), event=True)

    assert [event.icalendar_component["UID"] for event in in_march] == ["standup-1"]
    assert between_occurrences == []


def test_an_event_read_by_url_is_edited_with_its_etag_and_a_stale_copy_is_refused(calendar, ann):
    saved = calendar.save_event(dtstart=at(5, 10), dtend=at(5, 11), summary="Dentist", uid="dentist-1")
    mine = calendar.event_by_url(saved.url)
    theirs = calendar.event_by_url(saved.url)
    first_etag = CalendarEvent.objects.get(uid="dentist-1").etag

    mine.icalendar_component["SUMMARY"] = "Dentist (moved)"
    mine.save()
    theirs.icalendar_component["SUMMARY"] = "Dentist (stale edit)"

    with pytest.raises(error.DAVError):  # ETagMismatchError: the server answered 412
        theirs.save()
    stored = CalendarEvent.objects.get(uid="dentist-1")
    assert stored.title == "Dentist (moved)"
    assert stored.etag != first_etag
    assert calendar.event_by_url(saved.url).icalendar_component["SUMMARY"] == "Dentist (moved)"


def test_an_event_deleted_by_a_client_is_gone_for_every_path(calendar, ann):
    saved = calendar.save_event(dtstart=at(5, 10), dtend=at(5, 11), summary="Dentist", uid="dentist-1")

    calendar.event_by_url(saved.url).delete()

    assert not CalendarEvent.objects.filter(calendar__mailbox=ann).exists()
    with pytest.raises(error.NotFoundError):
        calendar.event_by_url(saved.url).load()


def test_sync_collection_sees_events_made_changed_and_deleted_through_the_services(calendar, ann):
    calendar.save_event(dtstart=at(5, 10), dtend=at(5, 11), summary="Dentist", uid="dentist-1")
    first = calendar.objects_by_sync_token(disable_fallback=True, load_objects=True)
    assert [obj.icalendar_component["UID"] for obj in first] == ["dentist-1"]

    own = calendar_for(account=ann.account, mailbox=ann)
    lunch = event_create(calendar=own, title="Lunch with Dan", start=at(6, 12), end=at(6, 13))
    after_create = calendar.objects_by_sync_token(sync_token=first.sync_token, disable_fallback=True,
                                                  load_objects=True)

    assert [obj.icalendar_component["SUMMARY"] for obj in after_create] == ["Lunch with Dan"]
    assert after_create.deleted_urls == set()
    assert after_create.sync_token != first.sync_token

    event_update(event=lunch, title="Lunch with Dan and Eve")
    event_delete(event=CalendarEvent.objects.get(uid="dentist-1"))
    after_changes = calendar.objects_by_sync_token(sync_token=after_create.sync_token, disable_fallback=True,
                                                   load_objects=True)

    changed = [obj for obj in after_changes if obj.url.canonical() not in after_changes.deleted_urls]
    assert [obj.icalendar_component["SUMMARY"] for obj in changed] == ["Lunch with Dan and Eve"]
    assert [str(url).rsplit("/", 1)[1] for url in after_changes.deleted_urls] == ["dentist-1.ics"]
    nothing_new = calendar.objects_by_sync_token(sync_token=after_changes.sync_token, disable_fallback=True)
    assert list(nothing_new) == [] and nothing_new.sync_token == after_changes.sync_token


def test_an_event_made_through_the_services_reads_back_over_caldav_with_the_same_etag(calendar, ann):
    own = calendar_for(account=ann.account, mailbox=ann)
    made = event_create(calendar=own, title="Board meeting", start=at(7, 14), end=at(7, 15))

    found = calendar.search(start=at(7), end=at(8), event=True)

    assert [event.icalendar_component["SUMMARY"] for event in found] == ["Board meeting"]
    loaded = calendar.event_by_url(found[0].url)
    loaded.load()
    assert loaded.props.get("{DAV:}getetag", f'"{made.etag}"') == f'"{made.etag}"'
    assert loaded.data.replace("\r\n", "\n") == made.ical.replace("\r\n", "\n")
