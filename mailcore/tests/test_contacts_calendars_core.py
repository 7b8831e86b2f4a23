"""The one model of contacts and events under every path: vCard and iCalendar text kept canonical
(a client's extra properties survive an edit made here), ETags and the collection's revision
moving with every change, tombstones for deletions, recurrence expanded with overrides and
exclusions, imports and exports, and the feed token stored only as a digest."""
from datetime import UTC, datetime

import icalendar
import pytest
import vobject

from mailcore.calendars import ical
from mailcore.calendars.models import Calendar
from mailcore.calendars.selectors import occurrences_between
from mailcore.calendars.services import (
    EventConflict, EventInvalid, calendar_by_feed_token, calendar_export, calendar_for, event_create, event_delete,
    event_put, event_update, events_import, feed_revoke, feed_token_create,
)
from mailcore.changelog import changes_since
from mailcore.contacts.selectors import contact_list
from mailcore.contacts.services import (
    ContactConflict, address_book_for, contact_create, contact_delete, contact_put, contact_update, contacts_export,
    contacts_import, group_delete, group_rename,
)
from testkit.factories import AccountFactory, make_mailbox

pytestmark = pytest.mark.django_db

PHONE_CARD = (
    "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:phone-1\r\nFN:Grace Hopper\r\nN:Hopper;Grace;;;\r\n"
    "EMAIL;TYPE=INTERNET:grace@navy.test\r\nTEL;TYPE=CELL:+1 555 0100\r\nADR;TYPE=WORK:;;1 Navy Way;DC;;;US\r\n"
    "PHOTO;ENCODING=b;TYPE=JPEG:AAEC\r\nCATEGORIES:Navy\r\nEND:VCARD\r\n")


def when(day, hour=9, minute=0, month=12):
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def mailbox():
    account = AccountFactory(plan_code="pro")
    return make_mailbox(account, "owner@example.test")


def test_a_contact_made_here_is_a_vcard_4_with_an_etag_and_a_logged_change(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Ada Lovelace", email="Ada@Example.TEST", company="Engines",
                             groups=["Work"])
    card = vobject.readOne(contact.vcard)
    assert card.version.value == "4.0" and card.uid.value == contact.uid
    assert card.fn.value == "Ada Lovelace" and card.email.value == "ada@example.test"
    assert card.categories.value == ["Work"]
    assert [change.href for change in changes_since(book, 0)] == [contact.href]
    first_etag, first_revision = contact.etag, book.revision

    contact_update(contact=contact, phone="+44 20 7946 0000")
    book.refresh_from_db()
    assert contact.etag != first_etag and book.revision == first_revision + 1
    assert vobject.readOne(contact.vcard).tel.value == "+44 20 7946 0000"


def test_a_phone_card_keeps_its_photo_and_address_through_an_edit_made_here(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact, created = contact_put(book=book, href="grace.vcf", text=PHONE_CARD)
    assert created and contact.vcard == PHONE_CARD
    assert (contact.name, contact.email, contact.phone) == ("Grace Hopper", "grace@navy.test", "+1 555 0100")
    assert [group.name for group in contact.groups.all()] == ["Navy"]

    contact_update(contact=contact, name="Rear Admiral Grace Hopper")
    card = vobject.readOne(contact.vcard)
    assert card.fn.value == "Rear Admiral Grace Hopper"
    assert card.photo.value and card.adr.value.street == "1 Navy Way"


def test_preconditions_and_uid_clashes_are_conflicts(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact, _ = contact_put(book=book, href="grace.vcf", text=PHONE_CARD)
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="grace.vcf", text=PHONE_CARD, if_none_match=True)
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="grace.vcf", text=PHONE_CARD, if_match="stale")
    with pytest.raises(ContactConflict):
        contact_put(book=book, href="other.vcf", text=PHONE_CARD)
    contact_put(book=book, href="grace.vcf", text=PHONE_CARD.replace("Grace Hopper", "G. Hopper"), if_match=contact.etag)


def test_a_deletion_leaves_a_tombstone_for_sync_clients(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Temp", email="t@example.test")
    token = book.revision
    contact_delete(contact=contact)
    (change,) = changes_since(book, token)
    assert change.href == contact.href and change.deleted


def test_renaming_or_deleting_a_group_rewrites_its_members_vcards(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact = contact_create(book=book, name="Ada", email="ada@example.test", groups=["Work", "Friends"])
    group = book.groups.get(name="Work")
    group_rename(group=group, name="Office")
    contact.refresh_from_db()
    assert vobject.readOne(contact.vcard).categories.value == ["Friends", "Office"] or \
        sorted(vobject.readOne(contact.vcard).categories.value) == ["Friends", "Office"]
    group_delete(group=group)
    contact.refresh_from_db()
    assert vobject.readOne(contact.vcard).categories.value == ["Friends"]


def test_vcard_import_and_export_round_trip(mailbox):
    book = address_book_for(account=mailbox.account, mailbox=mailbox)
    second = PHONE_CARD.replace("phone-1", "phone-2").replace("Grace Hopper", "Alan Turing").replace("grace@", "alan@")
    result = contacts_import(book=book, text=PHONE_CARD + second + "BEGIN:VCARD\r\nVERSION:3.0\r\nEND:VCARD\r\n")
    assert (result.created, result.updated, len(result.errors)) == (2, 0, 1)
    exported = contacts_export(contacts=contact_list(account=mailbox.account, mailbox=mailbox))
    assert [card.fn.value for card in vobject.readComponents(exported)] == ["Alan Turing", "Grace Hopper"]
    again = contacts_import(book=book, text=exported)
    assert (again.created, again.updated) == (0, 2)


def test_account_and_mailbox_books_are_separate(mailbox):
    account_book = address_book_for(account=mailbox.account)
    mine = address_book_for(account=mailbox.account, mailbox=mailbox)
    contact_create(book=account_book, name="Shared", email="s@example.test")
    contact_create(book=mine, name="Mine", email="m@example.test")
    assert [c.name for c in contact_list(account=mailbox.account, mailbox=mailbox)] == ["Mine"]
    assert [c.name for c in contact_list(account=mailbox.account, only_account_book=True)] == ["Shared"]
    assert [c.name for c in contact_list(account=mailbox.account, search="shar")] == ["Shared"]
    stranger = AccountFactory(plan_code="pro")
    assert not contact_list(account=stranger).exists()


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
