"""The calendar in the webmail: month, week and day views in the calendar's time zone, events made with
each recurrence preset (the RRULE read back with icalendar), one occurrence or the whole series edited
and deleted, bad input shown and nothing saved, .ics import and export, the tokened read-only feed,
the plan gate, another mailbox's event 404 and CSRF on every form."""
import html
import re
from datetime import UTC, datetime

import icalendar
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from mailcore.accounts.models import Plan
from calendars.models import CalendarEvent
from calendars.selectors import occurrences_between
from calendars.services import calendar_for, event_create, feed_token_create
from portal.tests.conftest import WEBMAIL_PASSWORD
from testkit.factories import make_mailbox

# The calendar's pages never read the mail store (their sidebar is the calendar's own), so the embedded
# store is enough: the Dovecot variant of webmail_owner would only repeat every test, slower.
pytestmark = pytest.mark.parametrize("webmail_owner", ["embedded"], indirect=True)


def when(day: int, hour: int = 9, minute: int = 0) -> datetime:
    return datetime(2026, 12, day, hour, minute, tzinfo=UTC)


def sign_in(client, mailbox) -> Client:
    response = client.post("/webmail/", {"address": mailbox.address, "password": WEBMAIL_PASSWORD})
    assert response.status_code == 302
    return client


@pytest.fixture
def owner(client, webmail_owner):
    return sign_in(client, webmail_owner)


@pytest.fixture
def calendar(webmail_owner):
    return calendar_for(account=webmail_owner.account, mailbox=webmail_owner)


@pytest.fixture
def berlin(calendar):
    calendar.timezone = "Europe/Berlin"
    calendar.save()
    return calendar


def page(response) -> str:
    return response.content.decode()


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page(response))).split())


def column(response, label: str) -> str:
    """The words in one day column of the week or day grid."""
    match = re.search(rf'role="group" aria-label="{label}">(.*?)</div>\s*(?=<div class="cal-grid__col"|</div>)',
                      page(response), re.S)
    assert match, f"no column {label}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split())


def all_day_cell(response, label: str) -> str:
    match = re.search(rf'aria-label="All day, {label}">(.*?)</ul>', page(response), re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(1))).split()) if match else ""


def rrule(event: CalendarEvent) -> dict:
    """The stored RRULE's parts (icalendar writes them in its own order)."""
    vevent = icalendar.Calendar.from_ical(event.ical).walk("VEVENT")[0]
    return dict(vevent["RRULE"])


def form(**fields) -> dict:
    data = {"title": "Standup", "start_date": "2026-12-07", "start_time": "09:00", "end_date": "2026-12-07",
            "end_time": "09:30", "repeat": "none", "interval": "1", "ends": "never", "color": ""}
    data.update(fields)
    return data


# views


def test_the_calendar_link_is_in_the_top_bar_and_the_month_shows_six_weeks(owner):
    response = owner.get("/webmail/calendar/?view=month&date=2026-12-15")

    assert response.status_code == 200
    assert 'href="/webmail/calendar/" aria-current="true">Calendar</a>' in page(response)
    assert page(response).count('class="cal-month__day') == 42
    assert "December 2026" in text(response)
    assert "Times in UTC" in text(response)


def test_a_weekly_series_on_monday_and_wednesday_shows_on_those_days(owner, calendar):
    event_create(calendar=calendar, title="Standup", start=when(7, 9), end=when(7, 9, 30),
                 recurrence="FREQ=WEEKLY;BYDAY=MO,WE;COUNT=4")

    week = owner.get("/webmail/calendar/?view=week&date=2026-12-09")
    month = owner.get("/webmail/calendar/?view=month&date=2026-12-01")

    assert [bool("Standup" in column(week, f"{name} {day} December")) for name, day in [
        ("Monday", 7), ("Tuesday", 8), ("Wednesday", 9), ("Thursday", 10), ("Friday", 11), ("Saturday", 12),
        ("Sunday", 13)]] == [True, False, True, False, False, False, False]
    assert column(week, "Monday 7 December") == "Standup 09:00–09:30"
    assert page(month).count(">Standup</span>") == 4  # Mon 7, Wed 9, Mon 14, Wed 16
    day = owner.get("/webmail/calendar/?view=day&date=2026-12-16")
    assert column(day, "Wednesday 16 December") == "Standup 09:00–09:30"
    assert "Standup" not in text(owner.get("/webmail/calendar/?view=day&date=2026-12-21"))


def test_an_all_day_event_is_in_the_all_day_row(owner, calendar):
    event_create(calendar=calendar, title="Holiday", start=when(24, 0), end=when(26, 0), all_day=True)

    week = owner.get("/webmail/calendar/?view=week&date=2026-12-24")

    assert all_day_cell(week, "Thursday 24 December") == "Holiday"
    assert all_day_cell(week, "Friday 25 December") == "Holiday"
    assert all_day_cell(week, "Saturday 26 December") == ""
    assert "Holiday" not in column(week, "Thursday 24 December")


def test_an_event_written_in_another_zone_is_shown_in_the_calendars_zone(owner, berlin):
    event_create(calendar=berlin, title="Call with New York", start=when(8, 15), end=when(8, 16),
                 timezone="America/New_York")  # 10:00 in New York is 16:00 in Berlin

    week = owner.get("/webmail/calendar/?view=week&date=2026-12-08")

    assert column(week, "Tuesday 8 December") == "Call with New York 16:00–17:00"
    assert "Times in Europe/Berlin" in text(week)


def test_the_month_says_how_many_more_events_a_day_has(owner, calendar):
    for hour in range(8, 13):
        event_create(calendar=calendar, title=f"Meeting {hour}", start=when(3, hour), end=when(3, hour, 30))

    month = owner.get("/webmail/calendar/?view=month&date=2026-12-03")

    assert "+2 more" in text(month)
    assert "Meeting 8" in text(month) and "Meeting 12" not in text(month)


def test_navigation_carries_the_view_and_the_date(owner):
    response = owner.get("/webmail/calendar/?view=week&date=2026-12-09")
    for odd in ("?view=month&date=0001-01-01", "?view=fortnight&date=9999-12-31", "?date=soon"):
        assert owner.get(f"/webmail/calendar/{odd}").status_code == 200

    assert 'href="/webmail/calendar/?view=week&amp;date=2026-11-30" aria-label="Previous week"' in page(response)
    assert 'href="/webmail/calendar/?view=week&amp;date=2026-12-14" aria-label="Next week"' in page(response)
    assert "7 – 13 Dec 2026" in text(response)


# creating with the recurrence presets


@pytest.mark.parametrize(("fields", "expected"), [
    ({"repeat": "daily"}, "FREQ=DAILY"),
    ({"repeat": "daily", "interval": "2", "ends": "count", "count": "10"}, "FREQ=DAILY;INTERVAL=2;COUNT=10"),
    ({"repeat": "weekly", "weekdays": ["MO", "WE"], "ends": "count", "count": "6"}, "FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6"),
    ({"repeat": "weekly", "weekdays": ["FR"], "ends": "until", "until": "2027-01-29"},
     "FREQ=WEEKLY;BYDAY=FR;UNTIL=20270129T225959Z"),  # the end of that day in Berlin, in UTC
    ({"repeat": "monthly"}, "FREQ=MONTHLY"),
    ({"repeat": "yearly", "interval": "2"}, "FREQ=YEARLY;INTERVAL=2"),
])
def test_each_recurrence_preset_makes_its_rrule(owner, berlin, fields, expected):
    response = owner.post("/webmail/calendar/events/new/", form(**fields))

    assert response.status_code == 302
    event = berlin.events.get()
    assert rrule(event) == dict(icalendar.vRecur.from_ical(expected))
    assert event.timezone == "Europe/Berlin"
    vevent = icalendar.Calendar.from_ical(event.ical).walk("VEVENT")[0]
    assert str(vevent["DTSTART"].params["TZID"]) == "Europe/Berlin"


def test_a_weekly_series_starts_on_its_first_chosen_day_and_keeps_its_local_time_across_dst(owner, berlin):
    owner.post("/webmail/calendar/events/new/", form(start_date="2027-03-23", end_date="2027-03-23",  # a Tuesday
                                                     repeat="weekly", weekdays=["TH"], ends="count", count="3"))

    event = berlin.events.get()
    starts = [placed.occurrence.start for placed in occurrences_between(
        berlin.events.all(), datetime(2027, 3, 1, tzinfo=UTC), datetime(2027, 5, 1, tzinfo=UTC))]
    assert starts == [datetime(2027, 3, 25, 8, tzinfo=UTC),  # 09:00 CET
                      datetime(2027, 4, 1, 7, tzinfo=UTC), datetime(2027, 4, 8, 7, tzinfo=UTC)]  # 09:00 CEST
    assert event.start == datetime(2027, 3, 25, 8, tzinfo=UTC)


def test_an_all_day_event_is_made_from_dates_with_the_last_day_included(owner, calendar):
    owner.post("/webmail/calendar/events/new/", form(title="Trip", all_day="on", start_date="2026-12-24",
                                                     start_time="", end_date="2026-12-26", end_time=""))

    event = calendar.events.get()
    vevent = icalendar.Calendar.from_ical(event.ical).walk("VEVENT")[0]
    assert (vevent["DTSTART"].dt.isoformat(), vevent["DTEND"].dt.isoformat()) == ("2026-12-24", "2026-12-27")


def test_colour_location_notes_and_guests_are_saved_and_shown(owner, calendar):
    owner.post("/webmail/calendar/events/new/", form(
        title="Review", location="Room 4", description="Bring the numbers", color="custom", custom_color="#0F766E",
        attendees="bea@example.org, Carl@Example.org\nbea@example.org"))

    event = calendar.events.get()
    assert (event.color, event.location, event.description) == ("#0f766e", "Room 4", "Bring the numbers")
    assert event.attendees == [{"email": "bea@example.org", "name": "", "status": "NEEDS-ACTION"},
                               {"email": "carl@example.org", "name": "", "status": "NEEDS-ACTION"}]
    assert event.organizer == "ann@example.test"
    detail = owner.get(f"/webmail/calendar/events/{event.pk}/")
    assert "When Mon 7 Dec 2026, 09:00–09:30 (UTC)" in text(detail)
    assert "Where Room 4" in text(detail)
    assert "Organizer ann@example.test" in text(detail)
    assert "bea@example.org No answer yet" in text(detail)
    assert "--event-color: #0f766e" in page(detail)


def test_the_edit_form_shows_the_preset_back_and_keeps_a_rule_it_cannot_express(owner, berlin):
    weekly = event_create(calendar=berlin, title="Gym", start=when(7, 17), end=when(7, 18), timezone="Europe/Berlin",
                          recurrence="FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;UNTIL=20270131T225959Z")
    custom = event_create(calendar=berlin, title="Board", start=when(7, 9), end=when(7, 10),
                          timezone="Europe/Berlin", recurrence="FREQ=MONTHLY;BYDAY=1MO")

    shown = page(owner.get(f"/webmail/calendar/events/{weekly.pk}/edit/"))
    assert '<option value="weekly" selected>' in shown
    assert 'name="interval" value="2"' in shown
    assert re.findall(r'name="weekdays" value="(\w\w)"[^>]*checked', shown) == ["MO", "TH"]
    assert 'name="until" value="2027-01-31"' in shown
    assert re.search(r'name="ends" value="until"[^>]*checked', shown)

    edit = owner.get(f"/webmail/calendar/events/{custom.pk}/edit/")
    assert '<option value="custom" selected>Keep its own rule (FREQ=MONTHLY;BYDAY=1MO)</option>' in page(edit)
    response = owner.post(f"/webmail/calendar/events/{custom.pk}/edit/", form(title="Board meeting", repeat="custom"))
    assert response.status_code == 302
    custom.refresh_from_db()
    assert (custom.title, custom.recurrence) == ("Board meeting", "FREQ=MONTHLY;BYDAY=1MO")


# one occurrence or the series


def series(calendar):
    return event_create(calendar=calendar, title="Standup", start=when(7, 9), end=when(7, 9, 30),
                        timezone=calendar.timezone, recurrence="FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6")


def seen(calendar) -> list[tuple[str, int, str]]:
    return [(placed.occurrence.title, placed.occurrence.start.day, f"{placed.occurrence.start:%H:%M}")
            for placed in occurrences_between(calendar.events.all(), when(1, 0), when(31, 0))]


def test_moving_one_occurrence_leaves_the_others(owner, calendar):
    event = series(calendar)

    edit = owner.get(f"/webmail/calendar/events/{event.pk}/edit/?occurrence=20261209T090000Z")
    assert 'name="scope" value="this"' in page(edit) and "All events in the series" in text(edit)
    assert 'name="start_date" value="2026-12-09"' in page(edit)
    response = owner.post(f"/webmail/calendar/events/{event.pk}/edit/?occurrence=20261209T090000Z",
                          form(scope="this", start_date="2026-12-10", end_date="2026-12-10", start_time="14:00",
                               end_time="14:30", repeat="weekly", weekdays=["MO", "WE"], ends="count", count="6"))

    assert response.status_code == 302
    assert seen(calendar) == [("Standup", 7, "09:00"), ("Standup", 10, "14:00"), ("Standup", 14, "09:00"),
                              ("Standup", 16, "09:00"), ("Standup", 21, "09:00"), ("Standup", 23, "09:00")]
    week = owner.get("/webmail/calendar/?view=week&date=2026-12-07")
    assert column(week, "Thursday 10 December") == "Standup 14:00–14:30"
    assert column(week, "Wednesday 9 December") == ""
    moved = owner.get(f"/webmail/calendar/events/{event.pk}/?occurrence=20261209T090000Z")
    assert "When Thu 10 Dec 2026, 14:00–14:30" in text(moved)


def test_changing_the_series_from_one_occurrence_moves_every_event(owner, calendar):
    event = series(calendar)

    owner.post(f"/webmail/calendar/events/{event.pk}/edit/?occurrence=20261214T090000Z",
               form(scope="all", title="Daily sync", start_date="2026-12-14", end_date="2026-12-14",
                    start_time="10:00", end_time="10:15", repeat="weekly", weekdays=["MO", "WE"], ends="count",
                    count="6"))

    assert seen(calendar) == [("Daily sync", day, "10:00") for day in (7, 9, 14, 16, 21, 23)]
    event.refresh_from_db()
    assert (event.start, event.end) == (when(7, 10), when(7, 10, 15))


def test_deleting_one_occurrence_or_the_series(owner, calendar):
    event = series(calendar)

    confirm = owner.get(f"/webmail/calendar/events/{event.pk}/delete/?occurrence=20261216T090000Z")
    assert "This event" in text(confirm) and "All events in the series" in text(confirm)
    owner.post(f"/webmail/calendar/events/{event.pk}/delete/?occurrence=20261216T090000Z", {"scope": "this"})
    assert [day for _, day, _ in seen(calendar)] == [7, 9, 14, 21, 23]

    owner.post(f"/webmail/calendar/events/{event.pk}/delete/?occurrence=20261221T090000Z", {"scope": "all"})
    assert not CalendarEvent.objects.filter(pk=event.pk).exists()


def test_an_occurrence_that_is_not_in_the_series_is_404(owner, calendar):
    event = series(calendar)

    assert owner.get(f"/webmail/calendar/events/{event.pk}/?occurrence=20261208T090000Z").status_code == 404
    assert owner.get(f"/webmail/calendar/events/{event.pk}/?occurrence=garbage").status_code == 404


# bad input


@pytest.mark.parametrize(("fields", "message"), [
    ({"end_time": "08:00"}, "The end may not be before the start."),
    ({"color": "custom", "custom_color": "blue"}, "A colour is # and six hex digits"),
    ({"attendees": "bea@example.org, not-an-address"}, "Not an email address: not-an-address."),
    ({"title": ""}, "This field is required."),
    ({"repeat": "daily", "ends": "count", "count": ""}, "How many times?"),
    ({"start_time": ""}, "Give a time, or tick All day."),
    ({"start_date": "0001-01-01"}, "Choose a date between 1900 and 2200."),
])
def test_bad_input_is_shown_next_to_the_field_and_nothing_is_saved(owner, calendar, fields, message):
    response = owner.post("/webmail/calendar/events/new/", form(**fields))

    assert response.status_code == 400
    assert message in text(response)
    assert not calendar.events.exists()


def test_a_bad_edit_changes_nothing(owner, calendar):
    event = series(calendar)
    before = event.ical

    response = owner.post(f"/webmail/calendar/events/{event.pk}/edit/?occurrence=20261209T090000Z",
                          form(scope="this", end_time="08:00"))

    assert response.status_code == 400
    event.refresh_from_db()
    assert event.ical == before


# import, export, feed


def test_import_then_export_round_trip(owner, calendar, webmail_owner):
    other = calendar_for(account=webmail_owner.account)
    event_create(calendar=other, title="Launch", start=when(3, 10), end=when(3, 11),
                 recurrence="FREQ=DAILY;COUNT=2")
    event_create(calendar=other, title="Party", start=when(18, 0), end=when(19, 0), all_day=True)
    from calendars.services import calendar_export
    upload = SimpleUploadedFile("mine.ics", calendar_export(calendar=other).encode(), content_type="text/calendar")

    response = owner.post("/webmail/calendar/import/", {"file": upload})

    assert "Imported: 2 new events, 0 updated." in text(response)
    assert sorted(calendar.events.values_list("title", flat=True)) == ["Launch", "Party"]
    exported = owner.get("/webmail/calendar/export.ics")
    assert exported["Content-Type"] == "text/calendar; charset=utf-8"
    assert exported["Content-Disposition"] == 'attachment; filename="calendar.ics"'
    parsed = icalendar.Calendar.from_ical(exported.content)
    assert sorted(str(event["SUMMARY"]) for event in parsed.walk("VEVENT")) == ["Launch", "Party"]

    again = owner.post("/webmail/calendar/import/", {"file": SimpleUploadedFile("again.ics", exported.content)})
    assert "Imported: 0 new events, 2 updated." in text(again)


def test_an_import_that_is_not_a_calendar_or_too_big_is_refused(owner, calendar):
    bad = owner.post("/webmail/calendar/import/", {"file": SimpleUploadedFile("x.ics", b"hello")})
    big = owner.post("/webmail/calendar/import/",
                     {"file": SimpleUploadedFile("big.ics", b"BEGIN:VCALENDAR\r\n" + b"X" * (5 * 1024 * 1024))})

    assert bad.status_code == 400 and "Not an iCalendar file" in text(bad)
    assert big.status_code == 400 and "The file is over 5 MB." in text(big)
    assert not calendar.events.exists()


def test_the_feed_link_is_shown_once_serves_the_calendar_and_stops_when_revoked(owner, calendar):
    event_create(calendar=calendar, title="Standup", start=when(7, 9), end=when(7, 9, 30))

    made = owner.post("/webmail/calendar/settings/feed/")
    url = re.search(r'id="feed-url" type="text" value="([^"]+)"', page(made)).group(1)
    path = url.removeprefix("http://testserver")
    assert re.fullmatch(r"/webmail/calendar/feed/[\w-]+\.ics", path)
    assert "shown only this once" in text(made)
    assert url not in page(owner.get("/webmail/calendar/settings/"))

    feed = Client().get(path)  # no session
    assert feed.status_code == 200 and feed["Content-Type"] == "text/calendar; charset=utf-8"
    assert [str(e["SUMMARY"]) for e in icalendar.Calendar.from_ical(feed.content).walk("VEVENT")] == ["Standup"]
    assert Client().post(path).status_code == 405  # read-only

    owner.post("/webmail/calendar/settings/feed/revoke/")
    assert Client().get(path).status_code == 404
    assert Client().get("/webmail/calendar/feed/not-a-token.ics").status_code == 404


def test_the_settings_set_the_zone_and_the_browser_presets_it_only_once(owner, calendar):
    assert owner.post("/webmail/calendar/settings/timezone/", {"timezone": "Mars/Base"}).status_code == 400
    assert owner.post("/webmail/calendar/settings/timezone/", {"timezone": "Asia/Tokyo"}).status_code == 204
    assert owner.post("/webmail/calendar/settings/timezone/", {"timezone": "Europe/Paris"}).status_code == 204
    calendar.refresh_from_db()
    assert calendar.timezone == "Asia/Tokyo"

    response = owner.post("/webmail/calendar/settings/", {"timezone": "America/Chicago", "color": "#16A34A"})
    assert response.status_code == 302
    calendar.refresh_from_db()
    assert (calendar.timezone, calendar.color) == ("America/Chicago", "#16a34a")
    refused = owner.post("/webmail/calendar/settings/", {"timezone": "Nowhere/Else", "color": "#16a34a"})
    assert refused.status_code == 400


# gate, strangers, CSRF


def test_a_plan_without_the_calendar_gets_a_clear_page(owner, webmail_owner):
    webmail_owner.plan = Plan.objects.get(code="free")
    webmail_owner.save()

    for url in ("/webmail/calendar/", "/webmail/calendar/events/new/", "/webmail/calendar/export.ics"):
        response = owner.get(url)
        assert response.status_code == 403
        assert "Calendar is not in your plan" in text(response)
        assert "Calendar needs the Pro plan or a higher plan; your plan does not include it." in text(response)


def test_the_feed_stops_when_the_plan_loses_the_calendar(calendar, webmail_owner):
    token = feed_token_create(calendar=calendar)
    webmail_owner.plan = Plan.objects.get(code="free")
    webmail_owner.save()

    assert Client().get(f"/webmail/calendar/feed/{token}.ics").status_code == 404


def test_another_mailboxs_event_is_404_everywhere_and_stays(owner, charlie):
    stranger = make_mailbox(charlie.account, "carl@charlie.test", password=WEBMAIL_PASSWORD)
    theirs = event_create(calendar=calendar_for(account=charlie.account, mailbox=stranger), title="Private",
                          start=when(7, 9), end=when(7, 10), recurrence="FREQ=DAILY;COUNT=3")
    before = theirs.ical

    for url in (f"/webmail/calendar/events/{theirs.pk}/", f"/webmail/calendar/events/{theirs.pk}/edit/",
                f"/webmail/calendar/events/{theirs.pk}/delete/",
                f"/webmail/calendar/events/{theirs.pk}/?occurrence=20261208T090000Z"):
        assert owner.get(url).status_code == 404
    assert owner.post(f"/webmail/calendar/events/{theirs.pk}/edit/", form()).status_code == 404
    assert owner.post(f"/webmail/calendar/events/{theirs.pk}/delete/", {"scope": "all"}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.ical == before
    assert "Private" not in text(owner.get("/webmail/calendar/?view=week&date=2026-12-07"))


def test_calendar_pages_send_everyone_else_to_the_sign_in_page(client, webmail_owner):
    response = client.get("/webmail/calendar/")

    assert (response.status_code, response["Location"]) == (302, "/webmail/?next=/webmail/calendar/")


def test_every_form_needs_the_csrf_token(owner, calendar):
    event = series(calendar)
    strict = Client(enforce_csrf_checks=True)
    strict.cookies = owner.cookies  # signed in
    strict.get("/webmail/calendar/")  # the CSRF cookie is set; the posts below leave the token out

    for url, data in [("/webmail/calendar/events/new/", form()),
                      (f"/webmail/calendar/events/{event.pk}/edit/", form(title="Changed")),
                      (f"/webmail/calendar/events/{event.pk}/delete/", {}),
                      ("/webmail/calendar/settings/", {"timezone": "Asia/Tokyo", "color": "#000000"}),
                      ("/webmail/calendar/settings/timezone/", {"timezone": "Asia/Tokyo"}),
                      ("/webmail/calendar/settings/feed/", {}),
                      ("/webmail/calendar/import/", {})]:
        assert strict.post(url, data).status_code == 403, url
    event.refresh_from_db()
    calendar.refresh_from_db()
    assert (calendar.events.count(), event.title, calendar.timezone, calendar.feed_token_digest) == (
        1, "Standup", "", None)
