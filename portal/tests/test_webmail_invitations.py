"""Invitations in the webmail as their recipient sees them: an iMIP message (built with icalendar,
multipart/alternative) shows a card with Accept, Tentative and Decline; answering puts the event in
the owner's calendar with their PARTSTAT and sends a REPLY to the organizer (read back from a real
SMTP server on loopback); a cancellation removes the event, an attendee's reply updates the
organizer's event. Broken calendar data shows the message without a card; only the owner of a
message can answer it. Embedded store."""
import email
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage

import icalendar
import pytest

from calendars.models import CalendarEvent
from calendars.services import calendar_for, event_create
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.dispatch import outbound_dispatch_due
from mailcore.store.factory import store_for
from portal.tests.conftest import WEBMAIL_PASSWORD as PASSWORD
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
UID = "meeting-42@remote.test"


@pytest.fixture
def owner(settings, plans, alice):
    settings.MAIL_STORE = "embedded"
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    mailbox.display_name = "Ann Owner"
    mailbox.save()
    store_for(mailbox).ensure_folders()
    return mailbox


def sign_in(client, mailbox):
    assert client.post("/webmail/", {"address": mailbox.address, "password": PASSWORD}).status_code == 302
    return client


@pytest.fixture
def signed_in(client, owner):
    return sign_in(client, owner)


def invitation_ical(*, method="REQUEST", sequence=0, attendees=("ann@example.test", "bea@remote.test"),
                    organizer="olga@remote.test", status=None, partstat="NEEDS-ACTION", recurrence_id=None,
                    title="Quarterly review", rrule=None) -> str:
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//Remote//Test//EN")
    calendar.add("version", "2.0")
    calendar.add("method", method)
    event = icalendar.Event()
    event.add("uid", UID)
    event.add("sequence", sequence)
    event.add("dtstamp", datetime.now(UTC))
    event.add("dtstart", START)
    event.add("dtend", START + timedelta(hours=1))
    event.add("summary", title)
    event.add("location", "Room 7")
    event.add("organizer", f"mailto:{organizer}", parameters={"CN": "Olga Organizer"})
    for address in attendees:
        event.add("attendee", f"mailto:{address}", parameters={"PARTSTAT": partstat, "RSVP": "TRUE"})
    if status:
        event.add("status", status)
    if recurrence_id:
        event.add("recurrence-id", recurrence_id)
        event["dtstart"] = icalendar.vDDDTypes(recurrence_id)
        event["dtend"] = icalendar.vDDDTypes(recurrence_id + timedelta(hours=1))
    if rrule:
        event.add("rrule", rrule)
    calendar.add_component(event)
    return calendar.to_ical().decode()


def imip_message(ical_text: str, *, method="REQUEST", sender="Olga Organizer <olga@remote.test>",
                 to="ann@example.test", subject="Invitation: Quarterly review") -> bytes:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, to, subject
    message["Message-ID"] = f"<{abs(hash(ical_text))}@remote.test>"
    message.set_content("You are invited.")
    message.add_alternative("<p>You are invited.</p>", subtype="html")
    message.add_alternative(ical_text, subtype="calendar", params={"method": method})
    return message.as_bytes()


def deliver(mailbox, raw: bytes) -> int:
    store = store_for(mailbox)
    store.deliver(raw, recipient=mailbox.address, envelope_from="olga@remote.test")
    return store.list("INBOX").messages[0].uid


def page(client, uid: int) -> str:
    response = client.get(f"/webmail/folders/INBOX/messages/{uid}/")
    assert response.status_code == 200
    return response.content.decode()


def replies(relay) -> list[tuple[list[str], EmailMessage, icalendar.Calendar]]:
    outbound_dispatch_due()
    found = []
    for received in relay.messages:
        message = email.message_from_bytes(received.content, policy=policy.default)
        [part] = [p for p in message.walk() if p.get_content_type() == "text/calendar"]
        found.append((received.rcpt_tos, message, icalendar.Calendar.from_ical(part.get_content())))
    relay.messages.clear()
    return found


def stored_partstat(event: CalendarEvent, address: str) -> str:
    return next(a["status"] for a in event.attendees if a["email"] == address)


def test_an_invitation_shows_a_card_with_the_event_and_three_answers(signed_in, owner):
    calendar = calendar_for(account=owner.account, mailbox=owner)
    calendar.timezone = "Europe/Berlin"
    calendar.save()
    uid = deliver(owner, imip_message(invitation_ical()))

    html = page(signed_in, uid)

    assert 'class="invitation invitation--request"' in html
    assert "Quarterly review" in html and "Room 7" in html
    assert "Tue 1 Dec 2026, 10:00–11:00 (Europe/Berlin)" in html  # the owner's calendar zone
    assert "Olga Organizer &lt;olga@remote.test&gt;" in html
    assert "bea@remote.test" in html
    for answer in ("accept", "tentative", "decline"):
        assert f'name="answer" value="{answer}"' in html
    assert f'action="/webmail/folders/INBOX/messages/{uid}/invitation/"' in html
    card = html.split('<section class="invitation', 1)[1].split("</section>", 1)[0]
    assert "csrfmiddlewaretoken" in card


@pytest.mark.parametrize("answer, partstat, verb", [
    ("accept", "ACCEPTED", "Accepted"),
    ("tentative", "TENTATIVE", "Tentative"),
])
def test_accepting_puts_the_event_in_the_calendar_and_replies_to_the_organizer(signed_in, owner, relay, answer,
                                                                               partstat, verb):
    uid = deliver(owner, imip_message(invitation_ical()))

    response = signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": answer})

    assert response.status_code == 302 and response["Location"] == f"/webmail/folders/INBOX/messages/{uid}/"
    event = CalendarEvent.objects.get(calendar__mailbox=owner)
    assert (event.uid, event.title, event.start, event.organizer) == (UID, "Quarterly review", START,
                                                                       "olga@remote.test")
    assert stored_partstat(event, "ann@example.test") == partstat
    assert stored_partstat(event, "bea@remote.test") == "NEEDS-ACTION"
    assert "METHOD" not in icalendar.Calendar.from_ical(event.ical)  # a calendar object resource has none
    [(rcpt, message, reply)] = replies(relay)
    assert rcpt == ["olga@remote.test"]
    assert message["From"] == "Ann Owner <ann@example.test>"
    assert message["Subject"].startswith(f"{verb}: Quarterly review @ ")
    assert str(reply["METHOD"]) == "REPLY"
    [vevent] = reply.walk("VEVENT")
    assert (str(vevent["UID"]), int(vevent["SEQUENCE"])) == (UID, 0)
    assert str(vevent["ATTENDEE"]) == "mailto:ann@example.test"  # only the one answering
    assert vevent["ATTENDEE"].params["PARTSTAT"] == partstat
    assert str(vevent["ORGANIZER"]) == "mailto:olga@remote.test"
    shown = page(signed_in, uid)
    assert f"In your calendar: {partstat.lower().capitalize()}." in shown


def test_declining_replies_declined_and_keeps_the_event_out_of_the_calendar(signed_in, owner, relay):
    uid = deliver(owner, imip_message(invitation_ical()))
    signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"})
    replies(relay)

    signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "decline"})

    assert not CalendarEvent.objects.filter(calendar__mailbox=owner).exists()
    [(rcpt, _, reply)] = replies(relay)
    [vevent] = reply.walk("VEVENT")
    assert rcpt == ["olga@remote.test"] and vevent["ATTENDEE"].params["PARTSTAT"] == "DECLINED"
    assert str(vevent["UID"]) == UID


def test_a_later_sequence_updates_the_stored_event_and_an_older_one_cannot_be_answered(signed_in, owner, relay):
    first = deliver(owner, imip_message(invitation_ical(sequence=0)))
    signed_in.post(f"/webmail/folders/INBOX/messages/{first}/invitation/", {"answer": "accept"})
    later = deliver(owner, imip_message(invitation_ical(sequence=2, title="Quarterly review (moved)")))

    signed_in.post(f"/webmail/folders/INBOX/messages/{later}/invitation/", {"answer": "accept"})

    event = CalendarEvent.objects.get(calendar__mailbox=owner)
    assert (event.title, event.sequence) == ("Quarterly review (moved)", 2)
    assert "Your calendar has a later version of this event." in page(signed_in, first)
    response = signed_in.post(f"/webmail/folders/INBOX/messages/{first}/invitation/", {"answer": "decline"},
                              follow=True)
    assert "Nothing was changed: Your calendar has a later version" in response.content.decode()
    assert CalendarEvent.objects.get(calendar__mailbox=owner).sequence == 2
    assert len(replies(relay)) == 2  # the two accepts; the refused decline sent nothing


def test_a_cancellation_shows_and_removes_the_event(signed_in, owner, relay):
    invited = deliver(owner, imip_message(invitation_ical()))
    signed_in.post(f"/webmail/folders/INBOX/messages/{invited}/invitation/", {"answer": "accept"})
    cancelled = deliver(owner, imip_message(invitation_ical(method="CANCEL", sequence=1, status="CANCELLED"),
                                            method="CANCEL", subject="Cancelled: Quarterly review"))

    html = page(signed_in, cancelled)
    assert "This event was cancelled" in html and 'value="remove"' in html
    assert 'value="accept"' not in html

    signed_in.post(f"/webmail/folders/INBOX/messages/{cancelled}/invitation/", {"answer": "remove"})

    assert not CalendarEvent.objects.filter(calendar__mailbox=owner).exists()
    assert "It is not in your calendar." in page(signed_in, cancelled)


def test_an_attendees_reply_updates_the_organizers_event(signed_in, owner):
    calendar = calendar_for(account=owner.account, mailbox=owner)
    event = event_create(calendar=calendar, title="Planning", start=START, end=START + timedelta(hours=1),
                         attendees=["bea@remote.test"])
    reply = invitation_ical(method="REPLY", attendees=["bea@remote.test"], organizer="ann@example.test",
                            partstat="ACCEPTED").replace(UID, event.uid)
    uid = deliver(owner, imip_message(reply, method="REPLY", sender="bea@remote.test", subject="Accepted: Planning"))

    html = page(signed_in, uid)
    assert "bea@remote.test accepted" in html and 'value="record"' in html

    signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "record"})

    event.refresh_from_db()
    assert stored_partstat(event, "bea@remote.test") == "ACCEPTED"
    assert event.sequence == 0  # an answer is not a new version of the event
    assert "Your calendar shows this answer." in page(signed_in, uid)


def test_the_whole_round_trip_between_two_hosted_mailboxes(client, owner, alice):
    """ann invites dan (hosted here): the REQUEST lands in dan's INBOX, dan accepts in his webmail,
    the REPLY lands in ann's INBOX and ann records it."""
    dan = make_mailbox(alice.account, "dan@example.test", password=PASSWORD)
    store_for(dan).ensure_folders()
    event = event_create(calendar=calendar_for(account=owner.account, mailbox=owner), title="Launch",
                         start=START, end=START + timedelta(hours=1), attendees=["dan@example.test"])
    outbound_dispatch_due()
    dan_client = sign_in(client.__class__(), dan)
    invitation_uid = store_for(dan).list("INBOX").messages[0].uid
    assert "Launch" in page(dan_client, invitation_uid)

    dan_client.post(f"/webmail/folders/INBOX/messages/{invitation_uid}/invitation/", {"answer": "accept"})
    outbound_dispatch_due()

    assert stored_partstat(CalendarEvent.objects.get(calendar__mailbox=dan), "dan@example.test") == "ACCEPTED"
    ann_client = sign_in(client, owner)
    reply_uid = store_for(owner).list("INBOX").messages[0].uid
    assert "dan@example.test accepted" in page(ann_client, reply_uid)
    ann_client.post(f"/webmail/folders/INBOX/messages/{reply_uid}/invitation/", {"answer": "record"})
    event.refresh_from_db()
    assert stored_partstat(event, "dan@example.test") == "ACCEPTED"


def test_a_broken_calendar_part_shows_the_message_without_a_card(signed_in, owner):
    broken = "BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nSUMMARY:No start\r\nEND:VCALENDAR\r\n"
    uid = deliver(owner, imip_message(broken))

    html = page(signed_in, uid)

    assert "You are invited." in html
    assert 'class="invitation' not in html
    response = signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"})
    assert response.status_code == 404


def test_an_invitation_for_someone_else_cannot_be_answered(signed_in, owner, relay):
    uid = deliver(owner, imip_message(invitation_ical(attendees=["bea@remote.test"])))

    html = page(signed_in, uid)
    assert "You are not on this invitation's list of attendees" in html and 'value="accept"' not in html
    response = signed_in.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"}, follow=True)

    assert "Nothing was changed: You are not on this invitation" in response.content.decode()
    assert not CalendarEvent.objects.filter(calendar__mailbox=owner).exists()
    assert OutboundMessage.objects.count() == 0


def test_a_stranger_mailbox_cannot_answer_the_owners_message(client, owner, charlie):
    uid = deliver(owner, imip_message(invitation_ical()))
    stranger = make_mailbox(charlie.account, "carl@charlie.test", password=PASSWORD)
    store_for(stranger).ensure_folders()
    sign_in(client, stranger)

    response = client.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"})

    assert response.status_code == 404
    assert not CalendarEvent.objects.exists()
    assert OutboundMessage.objects.count() == 0


def test_answering_needs_the_csrf_token(client, owner):
    from django.test import Client

    uid = deliver(owner, imip_message(invitation_ical()))
    checked = Client(enforce_csrf_checks=True)
    checked.get("/webmail/")
    token = checked.cookies["csrftoken"].value
    assert checked.post("/webmail/", {"address": owner.address, "password": PASSWORD,
                                      "csrfmiddlewaretoken": token}).status_code == 302

    response = checked.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"})

    assert response.status_code == 403
    assert not CalendarEvent.objects.exists()


def test_a_plan_without_calendar_sees_the_invitation_but_cannot_answer(client, owner, charlie):
    carl = make_mailbox(charlie.account, "carl@charlie.test", password=PASSWORD)
    store_for(carl).ensure_folders()
    uid = deliver(carl, imip_message(invitation_ical(attendees=["carl@charlie.test"]), to="carl@charlie.test"))
    sign_in(client, carl)

    html = page(client, uid)
    assert "Quarterly review" in html and "Calendar needs the Pro plan" in html
    assert 'value="accept"' not in html
    response = client.post(f"/webmail/folders/INBOX/messages/{uid}/invitation/", {"answer": "accept"}, follow=True)

    assert "Nothing was changed: Calendar needs the Pro plan" in response.content.decode()
    assert not CalendarEvent.objects.exists()
    assert OutboundMessage.objects.count() == 0


def test_the_organizers_own_copy_says_it_was_sent_by_them(signed_in, owner):
    uid = deliver(owner, imip_message(invitation_ical(organizer="ann@example.test", attendees=["bea@remote.test"])))

    html = page(signed_in, uid)

    assert "You sent this invitation." in html and 'value="accept"' not in html


def test_a_cancelled_occurrence_leaves_the_rest_of_the_series(signed_in, owner):
    invited = deliver(owner, imip_message(invitation_ical(rrule={"FREQ": "WEEKLY", "COUNT": 4})))
    assert "Repeats</dt><dd>weekly, 4 times" in page(signed_in, invited)
    signed_in.post(f"/webmail/folders/INBOX/messages/{invited}/invitation/", {"answer": "accept"})
    second = START + timedelta(days=7)
    cancelled = deliver(owner, imip_message(invitation_ical(method="CANCEL", sequence=1, status="CANCELLED",
                                                            recurrence_id=second), method="CANCEL"))

    signed_in.post(f"/webmail/folders/INBOX/messages/{cancelled}/invitation/", {"answer": "remove"})

    event = CalendarEvent.objects.get(calendar__mailbox=owner)
    master = [v for v in icalendar.Calendar.from_ical(event.ical).walk("VEVENT") if "RECURRENCE-ID" not in v][0]
    assert [d.dt for d in master["EXDATE"].dts] == [second]
