"""Several calendars and address books per mailbox, tasks, dead properties and MOVE, as sync clients
use them: the python caldav client (what DAVx5, Thunderbird and Apple send, in its words) and raw
WebDAV for what it does not cover (extended MKCOL, MOVE, PROPPATCH of Apple's properties)."""
from datetime import UTC, datetime

import caldav
import httpx
import pytest

from dav.tests.conftest import ANN, PASSWORD
from dav.tests.davhttp import BOOK, CALENDAR, NS, error_conditions, multistatus, propfind, vcard
from calendars.models import Calendar, CalendarEvent
from mailcore.changelog import MAX_DEAD_PROPERTIES
from contacts.models import AddressBook, Contact

HOME = "/dav/calendars/ann@example.test/"
BOOKS = "/dav/addressbooks/ann@example.test/"
XMLNS = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in NS.items())


@pytest.fixture
def principal(live_server, ann):
    with caldav.DAVClient(url=f"{live_server.url}/dav/", username=ANN, password=PASSWORD) as client:
        yield client.principal()


def todo(uid: str, summary: str, due: str = "20310301") -> str:
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Tasks.org//EN\r\nBEGIN:VTODO\r\n"
            f"UID:{uid}\r\nDTSTAMP:20310101T000000Z\r\nSUMMARY:{summary}\r\nDUE;VALUE=DATE:{due}\r\n"
            "PRIORITY:1\r\nSTATUS:NEEDS-ACTION\r\nEND:VTODO\r\nEND:VCALENDAR\r\n")


def vevent(uid: str, summary: str) -> str:
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:{uid}\r\nDTSTAMP:20310101T000000Z\r\nDTSTART:20310302T090000Z\r\nDTEND:20310302T100000Z\r\n"
            f"SUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


def proppatch(client: httpx.Client, path: str, props: str, remove: str = "") -> httpx.Response:
    body = f'<?xml version="1.0"?><d:propertyupdate {XMLNS}><d:set><d:prop>{props}</d:prop></d:set>'
    if remove:
        body += f"<d:remove><d:prop>{remove}</d:prop></d:remove>"
    return client.request("PROPPATCH", path, content=body + "</d:propertyupdate>")


def test_a_client_makes_a_task_list_puts_a_todo_and_finds_it_by_a_vtodo_query(principal, ann):
    tasks = principal.make_calendar(name="Errands", cal_id="errands", supported_calendar_component_set=["VTODO"])
    tasks.add_todo(todo("milk-1", "Buy milk"))

    assert sorted(str(c.url).split("/dav/")[1] for c in principal.calendars()) == [
        "calendars/ann@example.test/calendar/", "calendars/ann@example.test/errands/"]
    assert tasks.get_supported_components() == ["VTODO"]
    assert [str(found.icalendar_component["SUMMARY"]) for found in tasks.todos()] == ["Buy milk"]
    stored = CalendarEvent.objects.get(calendar__mailbox=ann, uid="milk-1")
    assert (stored.component, stored.calendar.slug, stored.calendar.name, stored.title, stored.priority,
            stored.due, stored.all_day) == ("VTODO", "errands", "Errands", "Buy milk", 1,
                                            datetime(2031, 3, 1, tzinfo=UTC), True)


def test_the_default_calendar_holds_events_and_tasks_and_a_query_for_one_kind_finds_only_it(principal, ann):
    default = principal.calendar(cal_id="calendar")
    default.add_todo(todo("t-1", "File taxes"))
    default.add_event(vevent("e-1", "Dentist"))

    assert default.get_supported_components() == ["VEVENT", "VTODO"]
    assert [str(found.icalendar_component["SUMMARY"]) for found in default.todos()] == ["File taxes"]
    assert [str(found.icalendar_component["SUMMARY"]) for found in default.events()] == ["Dentist"]
    assert [str(found.icalendar_component["SUMMARY"]) for found in default.search(
        start=datetime(2031, 3, 1, tzinfo=UTC), end=datetime(2031, 3, 4, tzinfo=UTC), event=True)] == ["Dentist"]


def test_a_calendar_refuses_the_component_it_does_not_hold_and_keeps_nothing(http, ann):
    made = http.request("MKCALENDAR", HOME + "meetings/", content=(
        f'<?xml version="1.0"?><cal:mkcalendar {XMLNS}><d:set><d:prop><d:displayname>Meetings</d:displayname>'
        '<cal:supported-calendar-component-set><cal:comp name="VEVENT"/></cal:supported-calendar-component-set>'
        '</d:prop></d:set></cal:mkcalendar>'))

    task = http.put(HOME + "meetings/t.ics", content=todo("t-2", "Nope"), headers={"Content-Type": "text/calendar"})

    assert made.status_code == 201
    assert task.status_code == 403 and error_conditions(task) == ["cal:supported-calendar-component"]
    answer = multistatus(propfind(http, HOME + "meetings/", "cal:supported-calendar-component-set"))[0]
    assert [comp.get("name") for comp in answer.props["cal:supported-calendar-component-set"]] == ["VEVENT"]
    assert not CalendarEvent.objects.filter(calendar__mailbox=ann).exists()


def test_mkcalendar_sets_apple_properties_in_the_same_request_and_an_existing_address_is_405(http, ann):
    body = (f'<?xml version="1.0"?><cal:mkcalendar {XMLNS}><d:set><d:prop><d:displayname>Work</d:displayname>'
            '<ical:calendar-color>#FF2968FF</ical:calendar-color><ical:calendar-order>3</ical:calendar-order>'
            '</d:prop></d:set></cal:mkcalendar>')

    made = http.request("MKCALENDAR", HOME + "work/", content=body)
    again = http.request("MKCALENDAR", HOME + "work/", content=body)
    on_default = http.request("MKCALENDAR", CALENDAR)

    assert (made.status_code, again.status_code, on_default.status_code) == (201, 405, 405)
    work = Calendar.objects.get(mailbox=ann, slug="work")
    assert (work.name, work.color, work.is_default, work.components) == ("Work", "#ff2968", False, "VEVENT,VTODO")
    answer = multistatus(propfind(http, HOME + "work/", "d:displayname", "ical:calendar-color",
                                  "ical:calendar-order"))[0]
    assert (answer.text("d:displayname"), answer.text("ical:calendar-color"),
            answer.text("ical:calendar-order")) == ("Work", "#ff2968", "3")


def test_proppatch_of_calendar_order_color_and_client_properties_is_207_with_200_and_propfind_returns_them(http, ann):
    patched = proppatch(http, CALENDAR, '<ical:calendar-order>7</ical:calendar-order>'
                        '<ical:calendar-color>#1BADF8FF</ical:calendar-color>'
                        '<x:sort-key xmlns:x="urn:example:client" x:kind="n"><x:v>12</x:v></x:sort-key>')

    answer = multistatus(patched)[0]
    assert set(answer.props) == {"ical:calendar-order", "ical:calendar-color", "{urn:example:client}sort-key"}
    assert answer.missing == {}
    found = multistatus(propfind(http, CALENDAR, "ical:calendar-order", "ical:calendar-color"))[0]
    assert (found.text("ical:calendar-order"), found.text("ical:calendar-color")) == ("7", "#1badf8")
    everything = multistatus(http.request("PROPFIND", CALENDAR, headers={"Depth": "0"}))[0]
    sort_key = everything.props["{urn:example:client}sort-key"]
    assert sort_key.get("{urn:example:client}kind") == "n"
    assert sort_key.findtext("{urn:example:client}v") == "12"
    removed = multistatus(proppatch(http, CALENDAR, "", remove='<ical:calendar-order/>'))[0]
    assert set(removed.props) == {"ical:calendar-order"}
    assert "ical:calendar-order" in multistatus(propfind(http, CALENDAR, "ical:calendar-order"))[0].missing
    assert set(Calendar.objects.get(mailbox=ann).properties) == {"{urn:example:client}sort-key"}


def test_dead_properties_past_their_bounds_are_507_with_a_reason_and_nothing_is_stored(http, ann):
    big = '<x:big xmlns:x="urn:x">' + "a" * 5000 + "</x:big>"

    body = "".join(f'<x:p{number} xmlns:x="urn:x">v</x:p{number}>' for number in range(MAX_DEAD_PROPERTIES + 1))
    answer = multistatus(proppatch(http, CALENDAR, body + '<d:displayname>Renamed</d:displayname>'))[0]
    assert answer.missing["{urn:x}p32"] == "507"
    assert answer.missing["{urn:x}p0"] == "424" and answer.missing["d:displayname"] == "424"
    big_answer = proppatch(http, CALENDAR, big)
    assert multistatus(big_answer)[0].missing == {"{urn:x}big": "507"}
    assert "at most 4096 bytes" in big_answer.text
    calendar = Calendar.objects.get(mailbox=ann)
    assert (calendar.properties, calendar.name) == ({}, "Calendar")


def test_protected_properties_are_403_and_the_rest_424(http, ann):
    answer = multistatus(proppatch(http, CALENDAR, '<cal:supported-calendar-component-set>'
                                   '<cal:comp name="VTODO"/></cal:supported-calendar-component-set>'
                                   '<ical:calendar-order>1</ical:calendar-order>'))[0]

    assert answer.missing == {"cal:supported-calendar-component-set": "403", "ical:calendar-order": "424"}
    assert Calendar.objects.get(mailbox=ann).properties == {}


def test_move_takes_an_event_to_another_calendar_and_both_sync_tokens_say_so(http, principal, ann):
    family = principal.make_calendar(name="Family", cal_id="family")
    default = principal.calendar(cal_id="calendar")
    default.add_event(vevent("bday-1", "Birthday"))
    token_default = default.objects_by_sync_token(load_objects=False).sync_token
    token_family = family.objects_by_sync_token(load_objects=False).sync_token
    etag = CalendarEvent.objects.get(uid="bday-1").etag

    moved = http.request("MOVE", CALENDAR + "bday-1.ics",
                         headers={"Destination": f"{http.base_url}{HOME}family/bday-1.ics"})

    assert moved.status_code == 201
    assert http.get(CALENDAR + "bday-1.ics").status_code == 404
    assert http.get(HOME + "family/bday-1.ics").headers["ETag"] == f'"{etag}"'
    gone = default.objects_by_sync_token(sync_token=token_default, load_objects=False)
    came = family.objects_by_sync_token(sync_token=token_family, load_objects=True)
    assert [str(obj.url).rsplit("/", 1)[1] for obj in gone] == ["bday-1.ics"]
    assert [str(obj.icalendar_component["SUMMARY"]) for obj in came] == ["Birthday"]
    assert CalendarEvent.objects.get(uid="bday-1").calendar.slug == "family"


def test_move_refuses_overwrite_f_a_uid_clash_and_a_destination_of_another_kind(http, principal, ann):
    principal.make_calendar(name="Family", cal_id="family")
    only_events = principal.make_calendar(name="Meetings", cal_id="meetings",
                                          supported_calendar_component_set=["VEVENT"])
    default = principal.calendar(cal_id="calendar")
    default.add_event(vevent("a-1", "A"))
    default.add_todo(todo("t-1", "Task"))
    http.put(HOME + "family/a-copy.ics", content=vevent("a-1", "A again"), headers={"Content-Type": "text/calendar"})
    http.put(HOME + "family/b.ics", content=vevent("b-1", "B"), headers={"Content-Type": "text/calendar"})

    kept = http.request("MOVE", CALENDAR + "a-1.ics", headers={"Destination": HOME + "family/b.ics", "Overwrite": "F"})
    clash = http.request("MOVE", CALENDAR + "a-1.ics", headers={"Destination": HOME + "family/a-1.ics"})
    task = http.request("MOVE", CALENDAR + "t-1.ics", headers={"Destination": str(only_events.url) + "t-1.ics"})
    to_book = http.request("MOVE", CALENDAR + "a-1.ics", headers={"Destination": BOOK + "a-1.vcf"})
    elsewhere = http.request("MOVE", CALENDAR + "a-1.ics", headers={"Destination": "https://evil.test/dav/x.ics"})

    assert kept.status_code == 412
    assert clash.status_code == 409 and error_conditions(clash) == ["cal:no-uid-conflict"]
    assert task.status_code == 403 and error_conditions(task) == ["cal:supported-calendar-component"]
    assert (to_book.status_code, elsewhere.status_code) == (409, 502)
    assert sorted(CalendarEvent.objects.filter(calendar__slug="calendar").values_list("uid", flat=True)) == [
        "a-1", "t-1"]
    assert CalendarEvent.objects.get(href="b.ics").title == "B"


def test_deleting_a_calendar_deletes_it_and_its_events_and_the_default_stays(principal, http, ann):
    work = principal.make_calendar(name="Work", cal_id="work")
    work.add_event(vevent("w-1", "Standup"))

    work.delete()

    assert propfind(http, HOME + "work/", "d:displayname").status_code == 404
    assert [str(c.url).split("/dav/")[1] for c in principal.calendars()] == ["calendars/ann@example.test/calendar/"]
    assert not CalendarEvent.objects.filter(uid="w-1").exists()


def test_an_address_book_made_by_extended_mkcol_holds_contacts_that_move_and_it_can_be_deleted(http, ann):
    made = http.request("MKCOL", BOOKS + "work/", content=(
        f'<?xml version="1.0"?><d:mkcol {XMLNS}><d:set><d:prop><d:resourcetype><d:collection/><card:addressbook/>'
        '</d:resourcetype><d:displayname>Work contacts</d:displayname></d:prop></d:set></d:mkcol>'))
    http.put(BOOK + "zoe.vcf", content=vcard("zoe-1", "Zoe Quinn", "zoe@example.test"),
             headers={"Content-Type": "text/vcard"})

    moved = http.request("MOVE", BOOK + "zoe.vcf", headers={"Destination": BOOKS + "work/zoe.vcf"})
    listed = multistatus(propfind(http, BOOKS, "d:displayname", depth="1"))

    assert (made.status_code, moved.status_code) == (201, 201)
    assert [(answer.href, answer.text("d:displayname")) for answer in listed] == [
        (BOOKS, ANN), (BOOK, "Contacts"), (BOOKS + "work/", "Work contacts")]
    assert Contact.objects.get(uid="zoe-1").book.slug == "work"
    assert http.delete(BOOKS + "work/").status_code == 204
    assert http.delete(BOOK).status_code == 403
    assert list(AddressBook.objects.filter(mailbox=ann).values_list("slug", flat=True)) == ["contacts"]
    assert not Contact.objects.filter(uid="zoe-1").exists()


def test_extended_mkcol_refuses_a_calendar_in_the_address_book_home(http, ann):
    made = http.request("MKCOL", BOOKS + "cal/", content=(
        f'<?xml version="1.0"?><d:mkcol {XMLNS}><d:set><d:prop><d:resourcetype><d:collection/><cal:calendar/>'
        '</d:resourcetype></d:prop></d:set></d:mkcol>'))
    in_calendars = http.request("MKCALENDAR", BOOKS + "cal2/")

    assert made.status_code == 403 and error_conditions(made) == ["d:valid-resourcetype"]
    assert in_calendars.status_code == 403 and error_conditions(in_calendars) == ["cal:calendar-collection-location-ok"]
    assert list(AddressBook.objects.filter(mailbox=ann).values_list("slug", flat=True)) == ["contacts"]


def test_a_stranger_gets_404_for_every_collection_of_anothers_and_cannot_move_into_them(live_server, principal, dan,
                                                                                           ann):
    principal.make_calendar(name="Work", cal_id="work").add_event(vevent("w-1", "Standup"))
    with httpx.Client(base_url=live_server.url, auth=("dan@other.test", "dans-password-1"), timeout=20) as stranger:
        stranger.put("/dav/calendars/dan@other.test/calendar/d.ics", content=vevent("d-1", "Dan's"),
                     headers={"Content-Type": "text/calendar"})
        answers = [
            propfind(stranger, HOME + "work/", "d:displayname").status_code,
            stranger.get(HOME + "work/w-1.ics").status_code,
            stranger.request("MKCALENDAR", HOME + "dans/").status_code,
            stranger.delete(HOME + "work/").status_code,
            proppatch(stranger, HOME + "work/", "<ical:calendar-order>1</ical:calendar-order>").status_code,
            stranger.request("MOVE", HOME + "work/w-1.ics",
                             headers={"Destination": "/dav/calendars/dan@other.test/calendar/w-1.ics"}).status_code,
        ]
        into = stranger.request("MOVE", "/dav/calendars/dan@other.test/calendar/d.ics",
                                headers={"Destination": HOME + "work/d.ics"})

    assert answers == [404, 404, 404, 404, 404, 404]
    assert into.status_code == 409
    assert list(Calendar.objects.filter(mailbox=ann).values_list("slug", "properties")) == [
        ("calendar", {}), ("work", {})]
    assert CalendarEvent.objects.get(uid="d-1").calendar.mailbox.address == "dan@other.test"
    assert CalendarEvent.objects.get(uid="w-1").calendar.slug == "work"


def test_an_address_book_made_by_mkcol_with_a_colour_and_recoloured_by_proppatch_shows_it(http, ann):
    made = http.request("MKCOL", BOOKS + "family/", content=(
        f'<?xml version="1.0"?><d:mkcol {XMLNS}><d:set><d:prop><d:resourcetype><d:collection/><card:addressbook/>'
        '</d:resourcetype><d:displayname>Family</d:displayname><ical:calendar-color>#FF2968FF</ical:calendar-color>'
        '</d:prop></d:set></d:mkcol>'))
    assert made.status_code == 201
    assert AddressBook.objects.get(mailbox=ann, slug="family").color == "#ff2968"

    patched = multistatus(proppatch(http, BOOKS + "family/", "<ical:calendar-color>#1BADF8</ical:calendar-color>"))[0]
    bad = proppatch(http, BOOKS + "family/", "<ical:calendar-color>green</ical:calendar-color>")

    assert set(patched.props) == {"ical:calendar-color"}
    assert multistatus(bad)[0].missing == {"ical:calendar-color": "403"}
    found = multistatus(propfind(http, BOOKS + "family/", "d:displayname", "ical:calendar-color"))[0]
    assert (found.text("d:displayname"), found.text("ical:calendar-color")) == ("Family", "#1badf8")


def test_a_book_made_and_filled_in_the_webmail_is_seen_by_a_sync_client(http, client, ann):
    assert client.post("/webmail/", {"address": ANN, "password": PASSWORD}).status_code == 302
    assert client.post("/webmail/contacts/books/", {"name": "Suppliers", "color": "#ca8a04"}).status_code == 302
    suppliers = AddressBook.objects.get(mailbox=ann, name="Suppliers")
    client.post("/webmail/contacts/new/", {"name": "Bolt Co", "email": "sales@bolt.test", "book": suppliers.pk})

    home = {answer.href: answer for answer in multistatus(propfind(
        http, BOOKS, "d:displayname", "d:resourcetype", "ical:calendar-color", depth="1"))}
    listing = multistatus(propfind(http, f"{BOOKS}{suppliers.slug}/", "d:getetag", depth="1"))
    card = http.get(next(answer.href for answer in listing if answer.href.endswith(".vcf")))

    made = home[f"{BOOKS}{suppliers.slug}/"]
    assert made.text("d:displayname") == "Suppliers" and made.text("ical:calendar-color") == "#ca8a04"
    assert made.props["d:resourcetype"].find("card:addressbook", NS) is not None
    assert home[BOOK].text("d:displayname") == "Contacts"
    assert "FN:Bolt Co" in card.text and "sales@bolt.test" in card.text
