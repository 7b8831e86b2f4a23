"""Invitations as attendees receive them: events written through the calendar services of a mailbox
send iMIP REQUEST and CANCEL messages through the normal pipeline (one per attendee, delivered by a
real SMTP server on loopback), each read back here with the email package and icalendar. The
account's calendar invites nobody, a rolled-back change sends nothing, the organizer is never
invited, and a bad address does not stop the others."""
import email
from datetime import UTC, datetime
from email import policy

import icalendar
import pytest
from django.db import transaction

from calendars.services import calendar_for, event_create, event_delete, event_update
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for

pytestmark = pytest.mark.django_db

GUESTS = ["bea@remote.test", "cy@remote.test"]


def when(day, hour=9):
    return datetime(2026, 12, day, hour, 0, tzinfo=UTC)


@pytest.fixture
def calendar(settings, alice, ann):
    settings.MAIL_STORE = "embedded"
    ann.display_name = "Ann Organizer"
    ann.save()
    calendar = calendar_for(account=alice.account, mailbox=ann)
    return calendar


def delivered(relay) -> list[tuple[list[str], email.message.EmailMessage, icalendar.Calendar]]:
    """Dispatch what is due; each message the relay took as (recipients, message, its calendar part)."""
    outbound_dispatch_due()
    found = []
    for received in relay.messages:
        message = email.message_from_bytes(received.content, policy=policy.default)
        [part] = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
        found.append((received.rcpt_tos, message, icalendar.Calendar.from_ical(part.get_content())))
    relay.messages.clear()
    return found


def by_recipient(found) -> dict:
    return {rcpt[0]: (message, cal) for rcpt, message, cal in found}


def vevent(cal) -> icalendar.Event:
    [event] = cal.walk("VEVENT")
    return event


def attendees(event) -> dict[str, str]:
    items = event.get("ATTENDEE")
    items = items if isinstance(items, list) else [items]
    return {str(item).removeprefix("mailto:"): str(item.params.get("PARTSTAT")) for item in items}


def make(calendar, **extra):
    return event_create(calendar=calendar, title="Planning", start=when(1), end=when(1, 10), timezone="Europe/Berlin",
                        location="Room 4", description="Agenda: budget", attendees=GUESTS, **extra)


def test_each_attendee_gets_a_request_with_the_organizer_uid_and_sequence_0(calendar, relay):
    event = make(calendar)

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    for address in GUESTS:
        message, cal = found[address]
        assert message["To"] == address
        assert message["From"] == "Ann Organizer <ann@example.test>"
        assert message["Subject"] == "Invitation: Planning @ Tue 1 Dec 2026, 10:00–11:00 (Europe/Berlin)"
        assert message.get_content_type() == "multipart/mixed"
        alternative = next(p for p in message.walk() if p.get_content_type() == "multipart/alternative")
        assert [p.get_content_type() for p in alternative.iter_parts()] == ["text/plain", "text/html", "text/calendar"]
        calendar_part = list(alternative.iter_parts())[2]
        assert calendar_part.get_param("method") == "REQUEST"
        assert any(p.get_filename() == "invite.ics" for p in message.walk())
        body = message.get_body(("plain",)).get_content()
        assert "Ann Organizer invites you to:" in body and "Where: Room 4" in body and "Agenda: budget" in body
        assert "Room 4" in message.get_body(("html",)).get_content()
        assert str(cal["METHOD"]) == "REQUEST"
        item = vevent(cal)
        assert str(item["UID"]) == event.uid
        assert int(item["SEQUENCE"]) == 0
        assert str(item["ORGANIZER"]) == "mailto:ann@example.test"
        assert item["ORGANIZER"].params["CN"] == "Ann Organizer"
        assert attendees(item) == {"bea@remote.test": "NEEDS-ACTION", "cy@remote.test": "NEEDS-ACTION"}
        assert all(a.params["RSVP"] == "TRUE" for a in item["ATTENDEE"])
        assert "DTSTAMP" in item
        assert item["DTSTART"].dt == datetime(2026, 12, 1, 10, 0, tzinfo=item["DTSTART"].dt.tzinfo)
        assert [str(tz["TZID"]) for tz in cal.walk("VTIMEZONE")] == ["Europe/Berlin"]
    sent = store_for(calendar.mailbox).list("Sent").messages
    assert len(sent) == 2  # the organizer keeps copies, as for any send


def test_moving_the_event_sends_a_request_with_sequence_1_and_the_same_uid(calendar, relay):
    event = make(calendar)
    delivered(relay)

    event_update(event=event, start=when(2), end=when(2, 10))

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    for address in GUESTS:
        message, cal = found[address]
        assert message["Subject"].startswith("Updated invitation: Planning @ Wed 2 Dec 2026")
        assert str(cal["METHOD"]) == "REQUEST"
        assert (str(vevent(cal)["UID"]), int(vevent(cal)["SEQUENCE"])) == (event.uid, 1)


def test_a_change_attendees_do_not_see_sends_nothing(calendar, relay):
    event = make(calendar)
    delivered(relay)

    event_update(event=event, color="#ff0000")

    assert delivered(relay) == []


def test_removing_an_attendee_cancels_for_them_and_updates_the_others(calendar, relay):
    event = make(calendar)
    delivered(relay)

    event_update(event=event, attendees=["bea@remote.test"])

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    _, cancel = found["cy@remote.test"]
    assert str(cancel["METHOD"]) == "CANCEL"
    assert str(vevent(cancel)["STATUS"]) == "CANCELLED"
    assert str(vevent(cancel)["UID"]) == event.uid
    assert attendees(vevent(cancel)) == {"cy@remote.test": "NEEDS-ACTION"}
    _, request = found["bea@remote.test"]
    assert str(request["METHOD"]) == "REQUEST"
    assert attendees(vevent(request)) == {"bea@remote.test": "NEEDS-ACTION"}


def test_deleting_the_event_cancels_it_for_every_attendee(calendar, relay):
    event = make(calendar)
    uid = event.uid
    delivered(relay)

    event_delete(event=event)

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    for address in GUESTS:
        message, cal = found[address]
        assert message["Subject"].startswith("Cancelled: Planning @ ")
        item = vevent(cal)
        assert (str(cal["METHOD"]), str(item["STATUS"]), str(item["UID"])) == ("CANCEL", "CANCELLED", uid)
        assert int(item["SEQUENCE"]) == 1


def test_deleting_one_occurrence_cancels_that_recurrence_id(calendar, relay):
    event = make(calendar, recurrence="FREQ=WEEKLY;COUNT=4")
    found = delivered(relay)
    assert "RRULE" in vevent(found[0][2])

    event_delete(event=event, occurrence=when(8))

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    for address in GUESTS:
        _, cal = found[address]
        item = vevent(cal)
        assert str(cal["METHOD"]) == "CANCEL" and str(item["STATUS"]) == "CANCELLED"
        assert item["RECURRENCE-ID"].dt.astimezone(UTC) == when(8)
        assert int(item["SEQUENCE"]) == 1


def test_changing_one_occurrence_sends_the_series_with_its_override(calendar, relay):
    event = make(calendar, recurrence="FREQ=WEEKLY;COUNT=4")
    delivered(relay)

    event_update(event=event, occurrence=when(8), start=when(8, 13), end=when(8, 14))

    found = by_recipient(delivered(relay))
    assert sorted(found) == GUESTS
    _, cal = found["bea@remote.test"]
    overrides = [v for v in cal.walk("VEVENT") if "RECURRENCE-ID" in v]
    assert [v["DTSTART"].dt.astimezone(UTC) for v in overrides] == [when(8, 13)]


def test_the_organizer_is_never_invited_and_account_calendars_invite_nobody(calendar, alice, relay):
    event_create(calendar=calendar, title="Self", start=when(1), end=when(1, 10),
                 attendees=["ann@example.test", "bea@remote.test"])
    assert [rcpt for rcpt, _, _ in delivered(relay)] == [["bea@remote.test"]]

    account_calendar = calendar_for(account=alice.account)
    event_create(calendar=account_calendar, title="Team", start=when(1), end=when(1, 10), attendees=GUESTS)

    assert OutboundMessage.objects.count() == 1
    assert delivered(relay) == []


def test_a_rolled_back_change_sends_no_invitation(calendar, relay):
    with pytest.raises(RuntimeError), transaction.atomic():
        make(calendar)
        raise RuntimeError("the caller failed after the write")

    assert OutboundMessage.objects.count() == 0
    assert calendar.events.count() == 0


def test_a_bad_address_does_not_stop_the_other_invitations_or_the_event(calendar, relay):
    event = event_create(calendar=calendar, title="Planning", start=when(1), end=when(1, 10),
                         attendees=["not an address@", "bea@remote.test"])

    assert calendar.events.get().pk == event.pk
    assert [rcpt for rcpt, _, _ in delivered(relay)] == [["bea@remote.test"]]


def test_only_invitations_carry_a_calendar_part(alice, ann):
    from mailcore.errors import InvalidFields
    from mailcore.sending.inputs import SendRequest
    from mailcore.sending.services import mail_send

    request = SendRequest.from_data({"from_email": "ann@example.test", "to": ["bea@remote.test"], "body_text": "x",
                                     "calendar": ("REQUEST", "BEGIN:VCALENDAR")})
    assert request.calendar is None  # the REST and MCP inputs never set one
    with pytest.raises(InvalidFields) as refused:
        mail_send(account=alice.account, user=None, request=SendRequest(
            from_email="ann@example.test", to=["bea@remote.test"], body_text="x", calendar=("PUBLISH", "x")))
    assert "REQUEST, CANCEL, REPLY" in refused.value.message_dict["calendar"][0]
    assert OutboundMessage.objects.count() == 0
