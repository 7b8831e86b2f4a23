"""One model under three ways in, each seen through the others over real HTTP: an event or contact
made through the REST API, by a sync client (caldav, raw CardDAV) and in the webmail shows up in the
other two; every change moves the resource's ETag and the collection's sync token."""
from datetime import UTC, datetime

import caldav
import httpx
import pytest
from django.test import Client

from dav.tests.conftest import ANN, PASSWORD
from dav.tests.davhttp import BOOK, multistatus, props_body, sync_token_of, vcard
from mailcore.accounts.models import User
from testkit.clients import new_key

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def rest(live_server, ann):
    """The REST API as an integrator of ann's account calls it."""
    user = User.objects.create_user(email="owner@example.test", password="owner-password-1", account=ann.account)
    key = new_key(user, scopes=["contacts:read", "contacts:write", "calendar:read", "calendar:write"])
    with httpx.Client(base_url=live_server.url, headers={"X-API-Key": key}, timeout=20) as client:
        yield client


@pytest.fixture
def dav_calendar(live_server, ann):
    with caldav.DAVClient(url=f"{live_server.url}/dav/", username=ANN, password=PASSWORD) as client:
        yield client.principal().calendars()[0]


@pytest.fixture
def webmail(ann):
    browser = Client()
    assert browser.post("/webmail/", {"address": ANN, "password": PASSWORD}).status_code == 302
    return browser


def calendar_state(calendar) -> tuple[str, dict[str, str]]:
    """The calendar's sync token and each event's ETag by UID, as the sync client sees them."""
    found = calendar.objects_by_sync_token(disable_fallback=True, load_objects=True)
    return found.sync_token, {str(obj.icalendar_component["UID"]): obj.props.get("{DAV:}getetag", "")
                              for obj in found}


def week_page(webmail, day: str) -> str:
    return webmail.get(f"/webmail/calendar/?view=week&date={day}").content.decode()


def test_events_made_by_rest_caldav_and_webmail_are_seen_by_the_other_two(rest, dav_calendar, webmail):
    token_0, _ = calendar_state(dav_calendar)

    made = rest.post("/calendar", json={"title": "Made by REST", "start": "2031-03-03T09:00:00Z",
                                        "end": "2031-03-03T10:00:00Z", "mailbox": ANN})
    assert made.status_code == 201, made.text
    token_1, etags_1 = calendar_state(dav_calendar)
    assert token_1 != token_0 and made.json()["uid"] in etags_1
    assert "Made by REST" in week_page(webmail, "2031-03-03")

    dav_calendar.save_event(dtstart=datetime(2031, 3, 4, 14, tzinfo=UTC), dtend=datetime(2031, 3, 4, 15, tzinfo=UTC),
                            summary="Made by a phone", uid="phone-event-1")
    listed = rest.get("/calendar", params={"mailbox": ANN, "from": "2031-03-01", "to": "2031-03-07"}).json()
    assert sorted(event["title"] for event in listed["events"]) == ["Made by REST", "Made by a phone"]
    assert "Made by a phone" in week_page(webmail, "2031-03-04")

    posted = webmail.post("/webmail/calendar/events/new/", {
        "title": "Made in webmail", "start_date": "2031-03-05", "start_time": "11:00", "end_date": "2031-03-05",
        "end_time": "11:30", "repeat": "none", "interval": "1", "ends": "never", "color": ""}, follow=True)
    assert posted.redirect_chain and "Made in webmail" in posted.content.decode()
    token_2, etags_2 = calendar_state(dav_calendar)
    assert token_2 != token_1 and len(etags_2) == 3
    titles = {event["title"]: event for event in rest.get("/calendar", params={"mailbox": ANN}).json()["events"]}
    assert set(titles) == {"Made by REST", "Made by a phone", "Made in webmail"}

    phone_event = titles["Made by a phone"]
    assert rest.patch(f"/calendar/{phone_event['id']}", json={"location": "Room 2"}).status_code == 200
    token_3, etags_3 = calendar_state(dav_calendar)
    assert token_3 != token_2 and etags_3["phone-event-1"] != etags_2["phone-event-1"]
    assert "LOCATION:Room 2" in dav_calendar.event_by_uid("phone-event-1").data
    assert etags_3[made.json()["uid"]] == etags_2[made.json()["uid"]]  # the others untouched

    assert rest.delete(f"/calendar/{titles['Made in webmail']['id']}").status_code == 204
    assert "Made in webmail" not in week_page(webmail, "2031-03-05")
    assert len(calendar_state(dav_calendar)[1]) == 2


def book_state(http: httpx.Client, token: str = "") -> tuple[str, dict[str, str | None]]:
    """sync-collection on the address book: the new token and, per href, its ETag (None: deleted)."""
    body = props_body("d:getetag", root="d:sync-collection",
                      inner=f"<d:sync-token>{token}</d:sync-token><d:sync-level>1</d:sync-level>")
    body = body.replace("<d:prop><d:getetag/></d:prop><d:sync-token>", "<d:sync-token>")
    body = body.replace("</d:sync-level>", "</d:sync-level><d:prop><d:getetag/></d:prop>")
    response = http.request("REPORT", BOOK, content=body, headers={"Content-Type": "application/xml"})
    return sync_token_of(response), {
        answer.href.rsplit("/", 1)[-1]: (answer.text("d:getetag") if "d:getetag" in answer.props else None)
        for answer in multistatus(response)}


def test_contacts_made_by_rest_carddav_and_webmail_are_seen_by_the_other_two(rest, http, webmail):
    token_0, _ = book_state(http)

    made = rest.post("/contacts", json={"name": "Rita Rest", "email": "rita@example.test", "mailbox": ANN})
    assert made.status_code == 201, made.text
    token_1, changed = book_state(http, token_0)
    assert list(changed) == [f"{made.json()['uid']}.vcf"] and token_1 != token_0
    assert "Rita Rest" in webmail.get("/webmail/contacts/").content.decode()

    put = http.put(f"{BOOK}pat.vcf", content=vcard("pat-1", "Pat Phone", "pat@example.test"),
                   headers={"Content-Type": "text/vcard", "If-None-Match": "*"})
    assert put.status_code == 201
    found = rest.get("/contacts", params={"mailbox": ANN, "search": "phone"}).json()["contacts"]
    assert [(c["name"], c["email"]) for c in found] == [("Pat Phone", "pat@example.test")]
    assert "Pat Phone" in webmail.get("/webmail/contacts/?q=pat").content.decode()

    posted = webmail.post("/webmail/contacts/new/", {"name": "Wes Webmail", "email": "wes@example.test",
                                                     "phone": "", "company": "", "notes": ""}, follow=True)
    assert posted.redirect_chain and "Wes Webmail" in posted.content.decode()
    token_2, changed = book_state(http, token_1)
    assert len(changed) == 2 and token_2 != token_1  # pat.vcf and Wes
    names = {c["name"]: c for c in rest.get("/contacts", params={"mailbox": ANN}).json()["contacts"]}
    assert set(names) == {"Rita Rest", "Pat Phone", "Wes Webmail"}

    etag_before = http.get(f"{BOOK}pat.vcf").headers["ETag"]
    assert rest.patch(f"/contacts/{names['Pat Phone']['id']}", json={"company": "Phones Inc"}).status_code == 200
    card = http.get(f"{BOOK}pat.vcf")
    assert card.headers["ETag"] != etag_before and "ORG:Phones Inc" in card.text
    stale = http.put(f"{BOOK}pat.vcf", content=vcard("pat-1", "Pat Stale"),
                     headers={"Content-Type": "text/vcard", "If-Match": etag_before})
    assert stale.status_code == 412

    assert http.delete(f"{BOOK}pat.vcf", headers={"If-Match": card.headers["ETag"]}).status_code == 204
    token_3, changed = book_state(http, token_2)
    assert changed["pat.vcf"] is None and "Pat Phone" not in webmail.get("/webmail/contacts/").content.decode()
    assert rest.get(f"/contacts/{names['Pat Phone']['id']}").status_code == 404
