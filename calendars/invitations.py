"""iMIP (RFC 6047): invitations to an event's attendees, sent from its organizer's mailbox through
the normal sending pipeline (calendars.imip builds and sends them).

Who sends: only a mailbox's calendar, for an event that mailbox organizes. The account's own
calendar (REST default) has no mailbox to send from: its attendees are stored, never invited. An
event someone else organizes (an invitation the owner accepted) is never re-sent from here.

When: called by the services inside their transaction. mail_send only stores an OutboundMessage row
(its dispatch is enqueued on commit), so a rolled-back change takes its invitations with it."""
from datetime import datetime

from calendars import imip
from calendars.models import CalendarEvent
from mailcore.mailboxes.models import Mailbox

# What attendees see of an event: a change of any of these (or of the attendee list) is re-sent.
ATTENDEE_FIELDS = ("title", "start", "end", "all_day", "timezone", "description", "location", "recurrence")


def _organizer_mailbox(event: CalendarEvent) -> Mailbox | None:
    calendar = event.calendar
    if calendar.mailbox_id is None:
        return None
    mailbox = calendar.mailbox
    if event.organizer and event.organizer != mailbox.address:
        return None
    return mailbox


def _guests(attendees: list[dict], organizer: str) -> list[dict]:
    return [attendee for attendee in attendees if attendee["email"] != organizer]


def event_changed(event: CalendarEvent, *, before, occurrence: datetime | None = None) -> None:
    """An event written here was created (before None) or changed (the series, or the one `occurrence`):
    REQUEST to its attendees, CANCEL to the removed."""
    mailbox = _organizer_mailbox(event)
    if mailbox is None:
        return
    guests = _guests(event.attendees, mailbox.address)
    if before is None:
        imip.requests_send(event, mailbox=mailbox, attendees=guests, updated=False)
        return
    now_invited = set(event.attendee_emails)
    removed = [a for a in _guests(before.attendees, mailbox.address) if a["email"] not in now_invited]
    if removed:
        imip.cancels_send(event, mailbox=mailbox, attendees=removed, sequence=event.sequence)
    list_changed = {a["email"] for a in before.attendees} != now_invited
    changed = list_changed or any(getattr(before, name) != getattr(event, name) for name in ATTENDEE_FIELDS)
    if changed or occurrence is not None:
        imip.requests_send(event, mailbox=mailbox, attendees=guests, updated=True)


def event_cancelled(event: CalendarEvent) -> None:
    """The organizer deleted the event: CANCEL to every attendee."""
    mailbox = _organizer_mailbox(event)
    if mailbox is None:
        return
    imip.cancels_send(event, mailbox=mailbox, attendees=_guests(event.attendees, mailbox.address),
                      sequence=event.sequence + 1)


def occurrence_cancelled(event: CalendarEvent, *, occurrence: datetime) -> None:
    """One occurrence of a series was deleted: CANCEL for that RECURRENCE-ID."""
    mailbox = _organizer_mailbox(event)
    if mailbox is None:
        return
    imip.cancels_send(event, mailbox=mailbox, attendees=_guests(event.attendees, mailbox.address),
                      sequence=event.sequence, occurrence=occurrence)
