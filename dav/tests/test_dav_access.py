"""Who may use /dav/ and what is refused: Basic sign-in with the mailbox password (throttled),
the stranger rule (another mailbox's paths are 404), the plan gate, hostile or oversized bodies,
the .well-known redirects, and the methods and properties a client may not use."""
from datetime import UTC, datetime

import httpx
import pytest

from dav.tests.conftest import ANN, PASSWORD
from dav.tests.davhttp import (BOOK, CALENDAR, error_conditions, multistatus, props_body, propfind, report)
from calendars.models import Calendar, CalendarEvent
from calendars.services import calendar_for, event_create
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.services import mailbox_set_password

pytestmark = pytest.mark.django_db(transaction=True)
EVENT = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\n"
         "DTSTAMP:20310101T000000Z\r\nDTSTART:{start}\r\nDTEND:{end}\r\nSUMMARY:{title}\r\nEND:VEVENT\r\n"
         "END:VCALENDAR\r\n")
BILLION_LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
                  '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
                  '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname>&lol2;</d:displayname></d:prop></d:propfind>')
EXTERNAL_ENTITY = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY secret SYSTEM "file:///etc/passwd">]>'
                   '<d:propfind xmlns:d="DAV:"><d:prop><d:displayname>&secret;</d:displayname></d:prop></d:propfind>')


def signed_in(live_server, address: str, password: str) -> httpx.Client:
    return httpx.Client(base_url=live_server.url, auth=(address, password), timeout=20)


def put_event(http, name: str, uid: str, title: str = "Dentist", start: str = "20310305T100000Z",
              end: str = "20310305T110000Z", **headers):
    return http.put(CALENDAR + name, content=EVENT.format(uid=uid, title=title, start=start, end=end),
                    headers={"Content-Type": "text/calendar; charset=utf-8", **headers})


def test_without_credentials_a_client_is_asked_to_sign_in_with_basic(live_server, ann):
    response = httpx.request("PROPFIND", f"{live_server.url}/dav/", headers={"Depth": "0"})

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith('Basic realm="Mailwell"')


@pytest.mark.parametrize(("address", "password"), [(ANN, "wrong-password"), ("nobody@example.test", PASSWORD),
                                                   (ANN.upper(), "wrong-password")])
def test_a_wrong_password_or_unknown_address_is_401(live_server, ann, address, password):
    with signed_in(live_server, address, password) as client:
        response = propfind(client, "/dav/", "d:current-user-principal")

    assert response.status_code == 401


def test_the_address_is_matched_without_regard_to_case(live_server, ann):
    with signed_in(live_server, ANN.upper(), PASSWORD) as client:
        answers = multistatus(propfind(client, "/dav/", "d:current-user-principal"))

    assert answers[0].hrefs("d:current-user-principal") == ["/dav/principals/ann@example.test/"]


def test_repeated_failures_are_throttled_even_for_the_right_password_afterwards(live_server, ann, settings):
    with signed_in(live_server, ANN, "wrong-password") as wrong:
        codes = [propfind(wrong, "/dav/", "d:displayname").status_code for _ in range(settings.LOGIN_FAILURE_LIMIT)]
    with signed_in(live_server, ANN, PASSWORD) as right:
        throttled = propfind(right, "/dav/", "d:displayname")

    assert codes == [401] * settings.LOGIN_FAILURE_LIMIT
    assert throttled.status_code == 429
    assert 0 < int(throttled.headers["Retry-After"]) <= settings.LOGIN_FAILURE_WINDOW.total_seconds()


def test_a_changed_password_stops_working_at_once_though_clients_repeat_it_on_every_request(live_server, ann):
    with signed_in(live_server, ANN, PASSWORD) as client:
        before = [propfind(client, "/dav/", "d:displayname").status_code for _ in range(3)]
        mailbox_set_password(mailbox=ann, password="a-new-password-2031")
        after_change = propfind(client, "/dav/", "d:displayname").status_code
    with signed_in(live_server, ANN, "a-new-password-2031") as client:
        with_new = propfind(client, "/dav/", "d:displayname").status_code

    assert before == [207, 207, 207]
    assert after_change == 401
    assert with_new == 207


def test_a_switched_off_mailbox_is_refused(live_server, ann):
    Mailbox.objects.filter(pk=ann.pk).update(is_active=False)

    with signed_in(live_server, ANN, PASSWORD) as client:
        response = propfind(client, "/dav/", "d:current-user-principal")

    assert response.status_code == 403
    assert "switched off" in response.text


def test_every_path_of_another_mailbox_is_404_and_nothing_is_written_there(http, dan):
    theirs = event_create(calendar=calendar_for(account=dan.account, mailbox=dan), title="Dan's secret",
                          start=datetime(2031, 3, 5, 10, tzinfo=UTC), end=datetime(2031, 3, 5, 11, tzinfo=UTC))
    their_calendar = "/dav/calendars/dan@other.test/calendar/"

    codes = [propfind(http, path, "d:displayname").status_code for path in (
        "/dav/principals/dan@other.test/", "/dav/addressbooks/dan@other.test/",
        "/dav/addressbooks/dan@other.test/contacts/", "/dav/calendars/dan@other.test/", their_calendar,
        their_calendar + theirs.href)]
    read = http.get(their_calendar + theirs.href)
    write = put_event(http, "../../dan@other.test/calendar/new.ics", "planted", "Planted")
    direct = http.put(their_calendar + "new.ics", content=EVENT.format(
        uid="x", title="Planted", start="20310305T100000Z", end="20310305T110000Z"),
        headers={"Content-Type": "text/calendar"})
    delete = http.delete(their_calendar + theirs.href)

    assert codes == [404] * 6
    assert (read.status_code, write.status_code, direct.status_code, delete.status_code) == (404, 404, 404, 404)
    assert list(CalendarEvent.objects.values_list("title", flat=True)) == ["Dan's secret"]


def test_a_free_plan_mailbox_is_told_which_plan_it_needs(live_server, fay):
    with signed_in(live_server, "fay@free.test", "fays-password-1") as client:
        calendar = propfind(client, "/dav/calendars/fay@free.test/calendar/", "d:displayname")
        book = propfind(client, "/dav/addressbooks/fay@free.test/contacts/", "d:displayname")
        root = propfind(client, "/dav/", "d:current-user-principal")

    assert (calendar.status_code, book.status_code, root.status_code) == (403, 403, 403)
    assert "Pro plan" in calendar.text and "Calendar" in calendar.text
    assert "Pro plan" in book.text and "Contacts" in book.text
    assert not Calendar.objects.filter(mailbox=fay).exists()


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY, "<d:propfind xmlns:d='DAV:'><d:prop>"])
def test_hostile_or_broken_xml_is_refused_with_400(http, body):
    response = http.request("PROPFIND", "/dav/", content=body, headers={"Depth": "0"})

    assert response.status_code == 400
    assert "passwd" not in response.text and "root:" not in response.text


def test_oversized_bodies_are_refused_with_413(http, ann):
    huge_xml = props_body("d:displayname").replace("<d:prop>", "<d:prop>" + "<!-- padding -->" * 20_000)
    huge_event = EVENT.format(uid="big", title="x" * 1_100_000, start="20310305T100000Z", end="20310305T110000Z")

    assert http.request("PROPFIND", "/dav/", content=huge_xml, headers={"Depth": "0"}).status_code == 413
    assert http.put(CALENDAR + "big.ics", content=huge_event,
                    headers={"Content-Type": "text/calendar"}).status_code == 413
    assert not CalendarEvent.objects.exists()


@pytest.mark.parametrize("service", ["caldav", "carddav"])
@pytest.mark.parametrize("method", ["GET", "PROPFIND"])
def test_the_well_known_addresses_redirect_to_the_dav_root(live_server, service, method):
    response = httpx.request(method, f"{live_server.url}/.well-known/{service}", follow_redirects=False)

    assert response.status_code == 301
    assert response.headers["Location"] == "/dav/"


def test_options_names_the_dav_classes_and_methods(live_server):
    response = httpx.options(f"{live_server.url}/dav/")

    assert response.status_code == 200
    assert response.headers["DAV"] == "1, 3, addressbook, calendar-access, extended-mkcol"
    assert set(response.headers["Allow"].split(", ")) == {
        "OPTIONS", "GET", "HEAD", "PUT", "DELETE", "PROPFIND", "PROPPATCH", "REPORT", "MKCOL", "MKCALENDAR", "MOVE"}


def test_depth_infinity_is_refused_with_the_finite_depth_precondition(http):
    response = propfind(http, "/dav/", "d:displayname", depth="infinity")

    assert response.status_code == 403
    assert error_conditions(response) == ["d:propfind-finite-depth"]


def test_the_default_calendar_cannot_be_deleted_and_collections_cannot_be_moved(http, ann):
    moved = http.request("MOVE", CALENDAR, headers={"Destination": "/dav/calendars/ann@example.test/other/"})
    deleted = http.delete(CALENDAR)
    plain = http.request("MKCOL", "/dav/calendars/ann@example.test/folder/")

    assert (moved.status_code, deleted.status_code, plain.status_code) == (403, 403, 403)
    assert deleted.text == "The default calendar cannot be deleted; delete its events instead.\n"
    assert error_conditions(plain) == ["d:valid-resourcetype"]
    assert list(Calendar.objects.filter(mailbox=ann).values_list("slug", "is_default")) == [("calendar", True)]


def test_unknown_properties_come_back_in_a_404_propstat(http):
    answer = multistatus(propfind(http, CALENDAR, "d:displayname", "d:quota-used-bytes", "cs:invite"))[0]

    assert answer.text("d:displayname") == "Calendar"
    assert answer.missing == {"d:quota-used-bytes": "404", "cs:invite": "404"}


def test_proppatch_renames_and_recolours_the_calendar_and_refuses_other_properties_whole(http, ann):
    update = ('<d:propertyupdate xmlns:d="DAV:" xmlns:ical="http://apple.com/ns/ical/"><d:set><d:prop>'
              '<d:displayname>Family</d:displayname><ical:calendar-color>#FF8800FF</ical:calendar-color>'
              '</d:prop></d:set></d:propertyupdate>')
    refused = ('<d:propertyupdate xmlns:d="DAV:"><d:set><d:prop><d:displayname>Work</d:displayname>'
               '<d:getetag>"forged"</d:getetag></d:prop></d:set></d:propertyupdate>')

    ok = multistatus(http.request("PROPPATCH", CALENDAR, content=update))[0]
    no = multistatus(http.request("PROPPATCH", CALENDAR, content=refused))[0]

    assert set(ok.props) == {"d:displayname", "ical:calendar-color"}
    assert no.missing == {"d:getetag": "403", "d:displayname": "424"}
    calendar = Calendar.objects.get(mailbox=ann)
    assert (calendar.name, calendar.color) == ("Family", "#ff8800")
    answer = multistatus(propfind(http, CALENDAR, "d:displayname", "ical:calendar-color"))[0]
    assert (answer.text("d:displayname"), answer.text("ical:calendar-color")) == ("Family", "#ff8800")


def test_calendar_query_filters_by_time_range_on_the_server(http):
    put_event(http, "march.ics", "march", "In March")
    put_event(http, "april.ics", "april", "In April", start="20310405T100000Z", end="20310405T110000Z")
    body = props_body("d:getetag", "cal:calendar-data", root="cal:calendar-query", inner=(
        '<cal:filter><cal:comp-filter name="VCALENDAR"><cal:comp-filter name="VEVENT">'
        '<cal:time-range start="20310401T000000Z" end="20310501T000000Z"/>'
        "</cal:comp-filter></cal:comp-filter></cal:filter>"))

    answers = multistatus(report(http, CALENDAR, body))

    assert [answer.href for answer in answers] == [CALENDAR + "april.ics"]
    assert "SUMMARY:In April" in answers[0].text("cal:calendar-data")


def test_calendar_query_for_tasks_finds_nothing_in_an_events_calendar(http):
    put_event(http, "march.ics", "march", "In March")
    body = props_body("d:getetag", root="cal:calendar-query", inner=(
        '<cal:filter><cal:comp-filter name="VCALENDAR"><cal:comp-filter name="VTODO"/>'
        "</cal:comp-filter></cal:filter>"))

    assert multistatus(report(http, CALENDAR, body)) == []


def test_calendar_multiget_returns_the_stored_text(http):
    put_event(http, "march.ics", "march", "In March")
    body = props_body("d:getetag", "cal:calendar-data", root="cal:calendar-multiget",
                      inner=f"<d:href>{CALENDAR}march.ics</d:href>")

    answer = multistatus(report(http, CALENDAR, body))[0]

    stored = CalendarEvent.objects.get(uid="march")
    assert answer.text("d:getetag") == f'"{stored.etag}"'
    assert answer.text("cal:calendar-data") == stored.ical.strip().replace("\r\n", "\n")


def test_calendar_data_that_is_not_an_event_or_task_is_refused_and_nothing_is_stored(http, ann):
    journal = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VJOURNAL\r\nUID:j1\r\n"
               "SUMMARY:Diary\r\nEND:VJOURNAL\r\nEND:VCALENDAR\r\n")

    refused = http.put(CALENDAR + "j1.ics", content=journal, headers={"Content-Type": "text/calendar"})
    garbage = http.put(CALENDAR + "g.ics", content="not a calendar", headers={"Content-Type": "text/calendar"})
    vcard_here = http.put(CALENDAR + "v.ics", content="BEGIN:VCARD\r\nEND:VCARD\r\n",
                          headers={"Content-Type": "text/vcard"})

    assert refused.status_code == 403 and error_conditions(refused) == ["cal:supported-calendar-component"]
    assert garbage.status_code == 400 and error_conditions(garbage) == ["cal:valid-calendar-data"]
    assert vcard_here.status_code == 415
    assert not CalendarEvent.objects.exists()


def test_book_path_exists_only_under_its_fixed_name(http):
    assert propfind(http, "/dav/addressbooks/ann@example.test/other/", "d:displayname").status_code == 404
    assert propfind(http, BOOK, "d:displayname").status_code == 207
