"""/calendar/calendars and /contacts/address-books: a mailbox's several calendars and address books
made, listed, renamed, recoloured and deleted over REST, seen by its sync clients; the default stays;
field rules; the stranger rule; events placed in and moved between calendars."""
import pytest

from calendars.models import Calendar, CalendarEvent
from mailcore.changelog import MAX_COLLECTIONS
from contacts.models import AddressBook
from testkit.clients import key_client, login_client
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def dora_api(db):
    """A Premium stranger: only the stranger rule stops her."""
    dora = UserFactory(email="dora@example.test", account__plan_code="premium")
    make_mailbox(dora.account, "dora@elsewhere.test")
    return login_client(dora)


def test_a_mailbox_gets_a_second_calendar_which_is_listed_renamed_recoloured_and_deleted(alice_api, ann):
    made = alice_api.post("/calendar/calendars", {"name": " Work ", "color": "#FF2968", "mailbox": ann.address},
                          format="json")

    assert made.status_code == 201, made.json()
    work = made.json()
    assert {key: work[key] for key in ("name", "color", "timezone", "components", "is_default", "mailbox")} == {
        "name": "Work", "color": "#ff2968", "timezone": "", "components": ["VEVENT", "VTODO"], "is_default": False,
        "mailbox": "ann@example.test"}
    stored = Calendar.objects.get(pk=work["id"])
    assert work["dav_url"] == f"/dav/calendars/ann@example.test/{stored.slug}/"
    listed = alice_api.get("/calendar/calendars", {"mailbox": ann.address}).json()
    assert [(item["name"], item["is_default"]) for item in listed["calendars"]] == [("Calendar", True), ("Work", False)]
    assert listed["total"] == 2

    patched = alice_api.patch(f"/calendar/calendars/{work['id']}", {"name": "Office", "color": "#00aa00",
                                                                    "timezone": "Europe/Berlin"}, format="json")
    assert patched.status_code == 200, patched.json()
    assert (patched.json()["name"], patched.json()["color"], patched.json()["timezone"]) == (
        "Office", "#00aa00", "Europe/Berlin")

    assert alice_api.delete(f"/calendar/calendars/{work['id']}").status_code == 204
    assert list(Calendar.objects.filter(mailbox=ann).values_list("name", flat=True)) == ["Calendar"]


def test_the_default_calendar_cannot_be_deleted(alice_api, ann):
    default = alice_api.get("/calendar/calendars", {"mailbox": ann.address}).json()["calendars"][0]

    response = alice_api.delete(f"/calendar/calendars/{default['id']}")

    assert response.status_code == 403
    assert response.json() == {"detail": "The default calendar cannot be deleted; delete its events instead."}
    assert Calendar.objects.filter(pk=default["id"]).exists()


@pytest.mark.parametrize("body, field", [
    ({"name": ""}, "name"), ({"name": "x" * 101}, "name"), ({"name": "W", "color": "red"}, "color"),
    ({"name": "W", "components": ["VJOURNAL"]}, "components"), ({"name": "W", "components": []}, "components"),
    ({"name": "W", "timezone": "Mars/Olympus"}, "timezone"),
    ({"name": "W", "mailbox": "nobody@example.test"}, "mailbox"),
    ({"name": "W", "is_default": True}, "is_default"), ({"name": 5}, "name"),
])
def test_a_bad_calendar_is_422_and_nothing_is_made(alice_api, ann, body, field):
    response = alice_api.post("/calendar/calendars", body, format="json")

    assert response.status_code == 422 and field in response.json()["errors"], response.json()
    assert Calendar.objects.count() == 0


def test_components_cannot_change_after_the_calendar_is_made(alice_api, ann):
    made = alice_api.post("/calendar/calendars", {"name": "Chores", "components": ["VTODO"], "mailbox": ann.address},
                          format="json").json()

    response = alice_api.patch(f"/calendar/calendars/{made['id']}", {"components": ["VEVENT"]}, format="json")

    assert response.status_code == 422
    assert response.json()["errors"] == {"components": ["Fixed when the calendar is made."]}
    assert Calendar.objects.get(pk=made["id"]).components == "VTODO"


def test_past_the_limit_a_calendar_is_refused(alice_api, ann):
    for number in range(MAX_COLLECTIONS - 1):
        assert alice_api.post("/calendar/calendars", {"name": f"C{number}", "mailbox": ann.address},
                              format="json").status_code == 201

    response = alice_api.post("/calendar/calendars", {"name": "One too many", "mailbox": ann.address}, format="json")

    assert response.status_code == 403
    assert response.json() == {"detail": f"A mailbox may have at most {MAX_COLLECTIONS} calendars."}
    assert Calendar.objects.filter(mailbox=ann).count() == MAX_COLLECTIONS


def test_an_event_goes_into_a_chosen_calendar_and_moves_to_another_of_the_same_mailbox(alice_api, alice, ann):
    work = alice_api.post("/calendar/calendars", {"name": "Work", "mailbox": ann.address}, format="json").json()
    family = alice_api.post("/calendar/calendars", {"name": "Family", "mailbox": ann.address}, format="json").json()
    own = alice_api.post("/calendar/calendars", {"name": "Account's"}, format="json").json()
    chores = alice_api.post("/calendar/calendars", {"name": "Chores", "components": ["VTODO"],
                                                    "mailbox": ann.address}, format="json").json()
    event = alice_api.post("/calendar", {"title": "Standup", "start": "2031-03-03T09:00:00Z",
                                         "end": "2031-03-03T09:15:00Z", "calendar_id": work["id"]},
                           format="json").json()
    assert (event["calendar_id"], event["mailbox"]) == (work["id"], "ann@example.test")
    revision = Calendar.objects.get(pk=work["id"]).revision

    moved = alice_api.patch(f"/calendar/{event['id']}", {"calendar_id": family["id"]}, format="json")
    elsewhere = alice_api.patch(f"/calendar/{event['id']}", {"calendar_id": own["id"]}, format="json")
    into_tasks = alice_api.patch(f"/calendar/{event['id']}", {"calendar_id": chores["id"]}, format="json")

    assert moved.status_code == 200 and moved.json()["calendar_id"] == family["id"]
    assert elsewhere.status_code == 422 and elsewhere.json()["errors"] == {
        "calendar_id": ["Must be a calendar of the same mailbox."]}
    assert into_tasks.status_code == 422 and into_tasks.json()["errors"] == {
        "calendar_id": ["That calendar holds tasks only."]}
    assert CalendarEvent.objects.get(pk=event["id"]).calendar_id == family["id"]
    assert Calendar.objects.get(pk=work["id"]).revision == revision + 1  # its sync clients see the event go
    assert [item["title"] for item in alice_api.get("/calendar", {"calendar_id": family["id"]}).json()["events"]] == [
        "Standup"]


def test_a_stranger_gets_404_for_anothers_calendars_and_cannot_use_them(alice_api, dora_api, ann):
    work = alice_api.post("/calendar/calendars", {"name": "Work", "mailbox": ann.address}, format="json").json()

    answers = [dora_api.get(f"/calendar/calendars/{work['id']}").status_code,
               dora_api.patch(f"/calendar/calendars/{work['id']}", {"name": "Mine"}, format="json").status_code,
               dora_api.delete(f"/calendar/calendars/{work['id']}").status_code]
    placed = dora_api.post("/calendar", {"title": "x", "start": "2031-03-03T09:00:00Z", "end": "2031-03-03T10:00:00Z",
                                         "calendar_id": work["id"]}, format="json")

    assert answers == [404, 404, 404]
    assert placed.status_code == 422 and placed.json()["errors"] == {"calendar_id": ["Not a calendar of this account."]}
    assert dora_api.get("/calendar/calendars").json()["calendars"] == []
    assert Calendar.objects.get(pk=work["id"]).name == "Work"
    assert not CalendarEvent.objects.exists()


def test_a_mailbox_gets_a_second_address_book_which_is_renamed_and_deleted(alice_api, ann):
    made = alice_api.post("/contacts/address-books", {"name": "Suppliers", "mailbox": ann.address}, format="json")

    assert made.status_code == 201, made.json()
    book = made.json()
    assert {key: book[key] for key in ("name", "is_default", "mailbox")} == {
        "name": "Suppliers", "is_default": False, "mailbox": "ann@example.test"}
    assert book["dav_url"].startswith("/dav/addressbooks/ann@example.test/")
    listed = alice_api.get("/contacts/address-books", {"mailbox": ann.address}).json()["address_books"]
    assert [(item["name"], item["is_default"]) for item in listed] == [("Contacts", True), ("Suppliers", False)]
    renamed = alice_api.patch(f"/contacts/address-books/{book['id']}", {"name": "Vendors"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Vendors"
    default = alice_api.delete(f"/contacts/address-books/{listed[0]['id']}")
    assert default.status_code == 403
    assert alice_api.delete(f"/contacts/address-books/{book['id']}").status_code == 204
    assert list(AddressBook.objects.filter(mailbox=ann).values_list("name", flat=True)) == ["Contacts"]


def test_an_address_book_is_made_in_a_colour_recoloured_and_a_bad_colour_changes_nothing(alice_api, ann):
    made = alice_api.post("/contacts/address-books", {"name": "Family", "color": "#DB2777", "mailbox": ann.address},
                          format="json").json()
    assert made["color"] == "#db2777"
    plain = alice_api.post("/contacts/address-books", {"name": "Plain", "mailbox": ann.address}, format="json")
    assert plain.json()["color"] == "#2563eb"

    recoloured = alice_api.patch(f"/contacts/address-books/{made['id']}", {"color": "#16a34a"}, format="json")
    bad = alice_api.patch(f"/contacts/address-books/{made['id']}", {"name": "Kin", "color": "green"}, format="json")

    assert recoloured.status_code == 200 and recoloured.json()["name"] == "Family"
    assert bad.status_code == 422 and "color" in bad.json()["errors"]
    book = AddressBook.objects.get(pk=made["id"])
    assert (book.name, book.color) == ("Family", "#16a34a")


def test_a_stranger_gets_404_for_anothers_address_books(alice_api, dora_api, ann):
    book = alice_api.post("/contacts/address-books", {"name": "Suppliers", "mailbox": ann.address},
                          format="json").json()

    answers = [dora_api.get(f"/contacts/address-books/{book['id']}").status_code,
               dora_api.patch(f"/contacts/address-books/{book['id']}", {"name": "Mine"}, format="json").status_code,
               dora_api.delete(f"/contacts/address-books/{book['id']}").status_code]

    assert answers == [404, 404, 404]
    assert AddressBook.objects.get(pk=book["id"]).name == "Suppliers"


def test_a_contact_goes_into_a_chosen_address_book_and_not_into_anothers(alice_api, dora_api, ann):
    book = alice_api.post("/contacts/address-books", {"name": "Suppliers", "mailbox": ann.address},
                          format="json").json()

    made = alice_api.post("/contacts", {"name": "Flour Mill", "email": "orders@mill.test",
                                        "address_book_id": book["id"]}, format="json")
    refused = dora_api.post("/contacts", {"name": "x", "email": "x@x.test", "address_book_id": book["id"]},
                            format="json")

    assert made.status_code == 201 and made.json()["address_book_id"] == book["id"]
    assert made.json()["mailbox"] == "ann@example.test"
    assert refused.status_code == 422 and refused.json()["errors"] == {
        "address_book_id": ["Not an address book of this account."]}
    assert list(AddressBook.objects.get(pk=book["id"]).contacts.values_list("name", flat=True)) == ["Flour Mill"]


def test_scopes_are_asked_for(alice, ann):
    reader = key_client(alice, scopes=["calendar:read", "contacts:read"])

    assert reader.get("/calendar/calendars").status_code == 200
    assert reader.post("/calendar/calendars", {"name": "W"}, format="json").status_code == 403
    assert reader.post("/contacts/address-books", {"name": "B"}, format="json").status_code == 403
    assert Calendar.objects.count() == 0 and AddressBook.objects.count() == 0
