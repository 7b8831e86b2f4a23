"""iMIP (RFC 6047): invitations to an event's attendees, sent from its organizer's mailbox through
the normal sending pipeline. Filled in by the invitations work of issue 16."""
from datetime import datetime

from mailcore.calendars.models import CalendarEvent


def event_changed(event: CalendarEvent, *, before) -> None:
    """An event written here was created (before None) or changed: REQUEST to its attendees, CANCEL to the removed."""


def event_cancelled(event: CalendarEvent) -> None:
    """The organizer deleted the event: CANCEL to every attendee."""


def occurrence_cancelled(event: CalendarEvent, *, occurrence: datetime) -> None:
    """One occurrence of a series was deleted: CANCEL for that RECURRENCE-ID."""
