"""CalDAV REPORTs beyond the stored text, as clients ask for them: occurrences expanded by the
server (python-caldav's server_expand, RFC 4791 9.6.5), limit-recurrence-set (9.6.6), free-busy
(7.10, python-caldav's freebusy_request) and the exact edges of a time range (9.9), where single
events are decided by their stored range and only series are expanded."""
from datetime import UTC, datetime

import caldav
import icalendar
import pytest

from dav.tests.conftest import ANN, PASSWORD
from dav.tests.davhttp import CALENDAR, multistatus, props_body, propfind, report
from calendars.models import CalendarEvent

pytestmark = pytest.mark.django_db(transaction=True)
BERLIN = ("BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\nBEGIN:DAYLIGHT\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\n"
          "TZNAME:CEST\r\nDTSTART:19700329T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\n"
          "BEGIN:STANDARD\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nTZNAME:CET\r\nDTSTART:19701025T030000\r\n"
          "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n")


def calendar_text(*events: str, zone: str = "") -> str:
    body = "".join(f"BEGIN:VEVENT\r\n{event.strip()}\r\nDTSTAMP:20310101T000000Z\r\nEND:VEVENT\r\n" for event in events)
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\n{zone}{body}END:VCALENDAR\r\n"


# A weekly standup at 09:00 Berlin time (08:00 UTC in winter, 07:00 UTC in summer) from Monday
# 17 March 2031: the 24 March occurrence is cancelled, the 31 March one moved to 11:00.
STANDUP = calendar_text(
    "UID:standup\r\nSUMMARY:Standup\r\nDTSTART;TZID=Europe/Berlin:20310317T090000\r\n"
    "DTEND;TZID=Europe/Berlin:20310317T091500\r\nRRULE:FREQ=WEEKLY;COUNT=10\r\n"
    "EXDATE;TZID=Europe/Berlin:20310324T090000",
    "UID:standup\r\nSUMMARY:Standup (late)\r\nRECURRENCE-ID;TZID=Europe/Berlin:20310331T090000\r\n"
    "DTSTART;TZID=Europe/Berlin:20310331T110000\r\nDTEND;TZID=Europe/Berlin:20310331T111500",
    zone=BERLIN)


def single(uid: str, start: str, end: str | None = None, extra: str = "") -> str:
    return calendar_text(f"UID:{uid}\r\nSUMMARY:{uid}\r\nDTSTART:{start}\r\n"
                         + (f"DTEND:{end}\r\n" if end else "") + extra)


def put(http, name: str, text: str) -> None:
    answer = http.put(CALENDAR + name, content=text, headers={"Content-Type": "text/calendar; charset=utf-8"})
    assert answer.status_code == 201, answer.text


@pytest.fixture
def calendar(dav_url, ann):
    with caldav.DAVClient(url=dav_url, username=ANN, password=PASSWORD) as client:
        yield client.principal().calendars()[0]


def query(http, start: str, end: str, data: str = "<cal:calendar-data/>") -> list:
    body = props_body("d:getetag", root="cal:calendar-query", inner=(
        f'<cal:filter><cal:comp-filter name="VCALENDAR"><cal:comp-filter name="VEVENT">'
        f'<cal:time-range start="{start}" end="{end}"/></cal:comp-filter></cal:comp-filter></cal:filter>'))
    body = body.replace("<d:getetag/>", "<d:getetag/>" + data)
    return multistatus(report(http, CALENDAR, body))


def test_a_client_asking_the_server_to_expand_gets_each_occurrence_in_utc_with_its_recurrence_id(http, calendar):
    put(http, "standup.ics", STANDUP)

    found = calendar.search(start=datetime(2031, 3, 20, tzinfo=UTC), end=datetime(2031, 4, 8, tzinfo=UTC),
                            event=True, expand=True, server_expand=True)

    occurrences = sorted((component for event in found for component in event.icalendar_instance.walk("VEVENT")),
                         key=lambda component: component["DTSTART"].dt)
    assert [(str(c["SUMMARY"]), c["DTSTART"].dt, c["DTEND"].dt, c["RECURRENCE-ID"].dt) for c in occurrences] == [
        ("Standup (late)", datetime(2031, 3, 31, 9, 0, tzinfo=UTC), datetime(2031, 3, 31, 9, 15, tzinfo=UTC),
         datetime(2031, 3, 31, 7, 0, tzinfo=UTC)),
        ("Standup", datetime(2031, 4, 7, 7, 0, tzinfo=UTC), datetime(2031, 4, 7, 7, 15, tzinfo=UTC),
         datetime(2031, 4, 7, 7, 0, tzinfo=UTC)),
    ]


def test_expanded_calendar_data_has_no_rules_and_no_time_zones_on_the_wire(http):
    put(http, "standup.ics", STANDUP)

    answers = query(http, "20310301T000000Z", "20310323T000000Z",
                    data='<cal:calendar-data><cal:expand start="20310301T000000Z" end="20310323T000000Z"/>'
                         "</cal:calendar-data>")

    text = answers[0].text("cal:calendar-data")
    assert [answer.href for answer in answers] == [CALENDAR + "standup.ics"]
    assert "DTSTART:20310317T080000Z" in text and "RECURRENCE-ID:20310317T080000Z" in text
    assert text.count("BEGIN:VEVENT") == 1
    for absent in ("RRULE", "EXDATE", "VTIMEZONE", "TZID"):
        assert absent not in text
    assert answers[0].text("d:getetag") == f'"{CalendarEvent.objects.get(uid="standup").etag}"'


def test_limit_recurrence_set_keeps_the_master_and_only_the_overrides_in_the_range(http):
    put(http, "standup.ics", STANDUP)
    limit = ('<cal:calendar-data><cal:limit-recurrence-set start="20310301T000000Z" end="20310325T000000Z"/>'
             "</cal:calendar-data>")

    early = query(http, "20310301T000000Z", "20310325T000000Z", data=limit)[0].text("cal:calendar-data")
    late = query(http, "20310301T000000Z", "20310402T000000Z", data=limit.replace("20310325", "20310402"))

    assert "RRULE:FREQ=WEEKLY;COUNT=10" in early and "Standup (late)" not in early
    assert "Standup (late)" in late[0].text("cal:calendar-data")


def test_free_busy_is_the_opaque_uncancelled_time_in_the_range_in_utc(http, calendar):
    put(http, "standup.ics", STANDUP)
    put(http, "lunch.ics", single("lunch", "20310318T110000Z", "20310318T120000Z"))
    put(http, "overlap.ics", single("overlap", "20310318T113000Z", "20310318T130000Z"))
    put(http, "maybe.ics", single("maybe", "20310319T140000Z", "20310319T150000Z", "STATUS:TENTATIVE"))
    put(http, "free.ics", single("free", "20310319T160000Z", "20310319T170000Z", "TRANSP:TRANSPARENT"))
    put(http, "off.ics", single("off", "20310319T180000Z", "20310319T190000Z", "STATUS:CANCELLED"))
    put(http, "trip.ics", single("trip", "20310320T220000Z", "20310322T100000Z"))

    answer = calendar.freebusy_request(datetime(2031, 3, 18, tzinfo=UTC), datetime(2031, 3, 21, tzinfo=UTC))

    component = icalendar.Calendar.from_ical(answer.data).walk("VFREEBUSY")[0]
    periods = [(str(prop.params["FBTYPE"]), prop.dt[0], prop.dt[1]) for prop in component["FREEBUSY"]]
    assert component["DTSTART"].dt == datetime(2031, 3, 18, tzinfo=UTC)
    assert component["DTEND"].dt == datetime(2031, 3, 21, tzinfo=UTC)
    assert periods == [
        ("BUSY", datetime(2031, 3, 18, 11, 0, tzinfo=UTC), datetime(2031, 3, 18, 13, 0, tzinfo=UTC)),
        ("BUSY-TENTATIVE", datetime(2031, 3, 19, 14, 0, tzinfo=UTC), datetime(2031, 3, 19, 15, 0, tzinfo=UTC)),
        ("BUSY", datetime(2031, 3, 20, 22, 0, tzinfo=UTC), datetime(2031, 3, 21, 0, 0, tzinfo=UTC)),
    ]


def test_free_busy_over_a_series_lists_its_occurrences_less_the_cancelled_one(http):
    put(http, "standup.ics", STANDUP)
    body = ('<?xml version="1.0"?><cal:free-busy-query xmlns:cal="urn:ietf:params:xml:ns:caldav">'
            '<cal:time-range start="20310317T000000Z" end="20310401T000000Z"/></cal:free-busy-query>')

    answer = report(http, CALENDAR, body)

    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/calendar")
    component = icalendar.Calendar.from_ical(answer.text).walk("VFREEBUSY")[0]
    assert [prop.dt[0] for prop in component["FREEBUSY"]] == [
        datetime(2031, 3, 17, 8, 0, tzinfo=UTC), datetime(2031, 3, 31, 9, 0, tzinfo=UTC)]


def test_a_free_busy_query_without_a_time_range_is_refused(http):
    body = '<?xml version="1.0"?><cal:free-busy-query xmlns:cal="urn:ietf:params:xml:ns:caldav"/>'

    assert report(http, CALENDAR, body).status_code == 400


def test_the_calendar_lists_free_busy_query_among_its_reports(http):
    answer = multistatus(propfind(http, CALENDAR, "d:supported-report-set"))[0]

    reports = [report.tag for report in answer.props["d:supported-report-set"].iter()
               if report.tag.startswith("{urn:ietf:params:xml:ns:caldav}")]
    assert "{urn:ietf:params:xml:ns:caldav}free-busy-query" in reports


@pytest.mark.parametrize(("start", "end", "expected"), [
    ("20310310T100000Z", "20310310T110000Z", ["inside", "instant", "meeting"]),
    ("20310310T110000Z", "20310310T120000Z", []),  # the meeting ends as the range starts
    ("20310310T090000Z", "20310310T100000Z", []),  # the meeting starts as the range ends
    ("20310310T103000Z", "20310310T103001Z", ["instant", "meeting"]),
])
def test_single_events_are_found_by_their_stored_range_at_the_exact_edges(http, start, end, expected):
    put(http, "meeting.ics", single("meeting", "20310310T100000Z", "20310310T110000Z"))
    put(http, "instant.ics", single("instant", "20310310T103000Z", "20310310T103000Z"))
    put(http, "inside.ics", single("inside", "20310310T100000Z", "20310310T101500Z"))

    found = query(http, start, end, data="")

    assert sorted(answer.href.rsplit("/", 1)[1].removesuffix(".ics") for answer in found) == expected


def test_a_series_is_found_only_where_an_occurrence_falls(http):
    put(http, "standup.ics", STANDUP)
    put(http, "yearly.ics", single("yearly", "20310105T100000Z", "20310105T110000Z", "RRULE:FREQ=YEARLY"))

    def names(start: str, end: str) -> list[str]:
        return sorted(answer.href.rsplit("/", 1)[1] for answer in query(http, start, end, data=""))

    assert names("20310324T000000Z", "20310325T000000Z") == []  # the cancelled Monday
    assert names("20310331T070000Z", "20310331T080000Z") == []  # where the moved one was (summer time)
    assert names("20310331T090000Z", "20310331T100000Z") == ["standup.ics"]  # where it went
    assert names("20790105T103000Z", "20790105T103001Z") == ["yearly.ics"]  # far ahead, without end
    assert names("20790106T000000Z", "20791231T000000Z") == []


def _models_when_0029_ran():
    """The models as the migration saw them (CalendarEvent was mailcore's until 0034 moved it)."""
    from django.db.migrations.loader import MigrationLoader
    return MigrationLoader(None, ignore_no_migrations=True).project_state(
        ("mailcore", "0029_davreport_fill_is_series")).apps


def test_the_migration_marks_the_series_already_stored(http):
    put(http, "standup.ics", STANDUP)
    put(http, "lunch.ics", single("lunch", "20310318T110000Z", "20310318T120000Z"))
    CalendarEvent.objects.update(is_series=False)
    migration = __import__("mailcore.migrations.0029_davreport_fill_is_series", fromlist=["fill_is_series"])

    migration.fill_is_series(_models_when_0029_ran(), None)

    assert dict(CalendarEvent.objects.values_list("uid", "is_series")) == {"standup": True, "lunch": False}


def test_the_migration_fills_in_batches_outside_one_transaction(http, monkeypatch):
    from django.db.migrations.loader import MigrationLoader
    for name in ("standup", "weekly"):
        put(http, f"{name}.ics", STANDUP.replace("UID:standup", f"UID:{name}"))
    for name in ("lunch", "dinner", "tea"):
        put(http, f"{name}.ics", single(name, "20310318T110000Z", "20310318T120000Z"))
    CalendarEvent.objects.update(is_series=False)
    migration = __import__("mailcore.migrations.0029_davreport_fill_is_series", fromlist=["fill_is_series"])
    monkeypatch.setattr(migration, "BATCH", 2)

    migration.fill_is_series(_models_when_0029_ran(), None)

    assert dict(CalendarEvent.objects.values_list("uid", "is_series")) == {
        "standup": True, "weekly": True, "lunch": False, "dinner": False, "tea": False}
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    assert graph.nodes[("mailcore", "0029_davreport_fill_is_series")].atomic is False
    assert graph.nodes[("mailcore", "0028_davreport_event_is_series")].operations[0].__class__.__name__ == "AddField"
    assert len(graph.nodes[("mailcore", "0028_davreport_event_is_series")].operations) == 1
