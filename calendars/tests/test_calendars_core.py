"""Events under every path: iCalendar text kept canonical, ETags and the calendar's revision moving
with every change, recurrence expanded with overrides and exclusions, imports and exports, and the
feed token stored only as a digest."""
from datetime import UTC, datetime

import icalendar
import pytest

from calendars import ical
from calendars.models import Calendar
from calendars.selectors import occurrences_between
from calendars.services import (
    EventConflict, EventInvalid, calendar_by_feed_token, calendar_export, calendar_for, event_create, event_delete,
    event_put, event_update, events_import, feed_revoke, feed_token_create,
)
from mailcore.changelog import changes_since
from testkit.factories import AccountFactory, make_mailbox

pytestmark = pytest.mark.django_db


def when(day, hour=9, minute=0, month=12):
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def mailbox():
    account = AccountFactory(plan_code="pro")
    return make_mailbox(account, "owner@example.test")


def test_a_weekly_series_with_one_moved_and_one_dropped_occurrence(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    event = event_create(calendar=calendar, title="Standup", start=when(7, 8), end=when(7, 8, 30),
                         timezone="Europe/Berlin", recurrence="FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6")
    parsed = icalendar.Calendar.from_ical(event.ical)
    assert str(parsed.walk("VEVENT")[0]["DTSTART"].params["TZID"]) == "Europe/Berlin"
    assert event.range_end == when(23, 8, 30)

    event = event_update(event=event, occurrence=when(9, 8), start=when(9, 10), end=when(9, 10, 30), title="Moved")
    event_delete(event=event, occurrence=when(14, 8))
    seen = [(placed.occurrence.title, placed.occurrence.start.day, placed.occurrence.start.hour)
            for placed in occurrences_between(calendar.events.all(), when(1, 0), when(31, 0))]
    assert seen == [("Standup", 7, 8), ("Moved", 9, 10), ("Standup", 16, 8), ("Standup", 21, 8), ("Standup", 23, 8)]


def test_event_rules_are_enforced(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    with pytest.raises(EventInvalid):
        event_create(calendar=calendar, title="Backwards", start=when(2), end=when(1))
    with pytest.raises(EventInvalid):
        event_create(calendar=calendar, title="Rule", start=when(1), end=when(1), recurrence="FREQ=SOMETIMES")
    with pytest.raises(EventInvalid):
        event_create(calendar=calendar, title="Zone", start=when(1), end=when(1), timezone="Mars/Olympus")
    with pytest.raises(EventInvalid, match="no occurrence"):
        event_create(calendar=calendar, title="Never", start=when(1), end=when(1), recurrence="FREQ=DAILY;COUNT=0")
    single = event_create(calendar=calendar, title="Once", start=when(1), end=when(1, 10))
    with pytest.raises(EventInvalid):
        event_update(event=single, occurrence=when(1), title="x")


def test_an_all_day_event_is_whole_dates_with_an_exclusive_end(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    event = event_create(calendar=calendar, title="Holiday", start=when(24, 15), end=when(24, 15), all_day=True)
    vevent = icalendar.Calendar.from_ical(event.ical).walk("VEVENT")[0]
    assert vevent["DTSTART"].dt.isoformat() == "2026-12-24" and vevent["DTEND"].dt.isoformat() == "2026-12-25"
    assert (event.start, event.end) == (when(24, 0), when(25, 0))


def test_ics_import_export_and_client_puts_share_the_change_log(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    event_create(calendar=calendar, title="Made here", start=when(3), end=when(3, 10))
    exported = calendar_export(calendar=calendar)
    other = calendar_for(account=mailbox.account)
    result = events_import(calendar=other, text=exported)
    assert (result.created, result.errors) == (1, [])
    token = calendar.revision
    text = ical.build(ical.EventFields(uid="client-1", title="From a phone", start=when(4), end=when(4, 10)))
    event, created = event_put(calendar=calendar, href="client-1.ics", text=text)
    assert created and event.ical == text
    with pytest.raises(EventConflict):
        event_put(calendar=calendar, href="client-1.ics", text=text, if_match="stale")
    assert [change.href for change in changes_since(calendar, token)] == ["client-1.ics"]


def test_a_client_event_with_extra_dates_is_found_in_a_range_past_its_first_date(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    text = ical.build(ical.EventFields(uid="rdate-1", title="Twice", start=when(1), end=when(1, 10)))
    text = text.replace("END:VEVENT", "RDATE:20261220T090000Z\r\nEND:VEVENT")
    event, _ = event_put(calendar=calendar, href="rdate-1.ics", text=text)
    assert event.range_end == when(20, 10)
    assert [p.occurrence.start.day for p in occurrences_between(calendar.events.all(), when(15), when(31))] == [20]


def test_the_feed_token_is_kept_as_a_digest_and_can_be_revoked(mailbox):
    calendar = calendar_for(account=mailbox.account, mailbox=mailbox)
    token = feed_token_create(calendar=calendar)
    assert token not in (calendar.feed_token_digest or "")
    assert calendar_by_feed_token(token) == calendar
    feed_revoke(calendar=calendar)
    with pytest.raises(Calendar.DoesNotExist):
        calendar_by_feed_token(token)
