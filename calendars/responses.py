"""Answers to iMIP messages a mailbox received: accepting, declining or tentatively accepting an
invitation (the event filed through the calendar services, a REPLY sent to the organizer), applying
an organizer's CANCEL, and recording an attendee's REPLY on the organizer's event. Built on
calendars.imip (parsing and sending) and the calendar services, which sit below it."""
import hashlib
from datetime import datetime

from django.db import transaction

from calendars import ical, services
from calendars.imip import (
    ANSWERS, SUBJECT_VERBS, Invitation, InvitationInvalid, InvitationStale, calendar_gate, imip_bodies, imip_send,
    invitation_parse, mailbox_addresses, reply_text, when_text,
)
from calendars.models import CalendarEvent
from mailcore.mailboxes.models import Mailbox


def _invitation(ical_text: str, method: str) -> Invitation:
    try:
        invitation = invitation_parse(ical_text)
    except ical.ICalError as exc:
        raise InvitationInvalid(f"This calendar data cannot be read: {exc}") from exc
    if invitation.method != method:
        raise InvitationInvalid(f"This is not a {method} message.")
    return invitation


def _with_partstat(text: str, *, attendee: str, partstat: str, recurrence_id: datetime | None = None,
                   drop_method: bool = False) -> str:
    """The calendar text with this attendee's PARTSTAT set (on every VEVENT, or only the occurrence)."""
    calendar = ical.parse(text)
    if drop_method:  # a stored calendar object resource has no METHOD (RFC 4791 4.1)
        calendar.pop("METHOD", None)
        calendar.subcomponents = [c for c in calendar.subcomponents if c.name in ("VEVENT", "VTIMEZONE")]
    for vevent in calendar.walk("VEVENT"):
        rid = vevent.get("RECURRENCE-ID")
        if recurrence_id is not None and (rid is None or ical._utc(rid.dt) != recurrence_id):
            continue
        for item in ical._as_list(vevent.get("ATTENDEE")):
            if ical._address(item) == attendee:
                item.params["PARTSTAT"] = partstat
                item.params.pop("RSVP", None)
    return calendar.to_ical().decode()


def _merge_occurrence(stored: str, invitation_text: str) -> str:
    """An invitation for one occurrence of a series the owner has: that override replaced or added."""
    calendar = ical.parse(stored)
    incoming = ical.parse(invitation_text)
    for vevent in incoming.walk("VEVENT"):
        key = ical._utc(vevent["RECURRENCE-ID"].dt)
        calendar.subcomponents = [c for c in calendar.subcomponents if not (
            c.name == "VEVENT" and "RECURRENCE-ID" in c and ical._utc(c["RECURRENCE-ID"].dt) == key)]
        calendar.add_component(vevent)
    calendar.add_missing_timezones()
    return calendar.to_ical().decode()


@transaction.atomic
def invitation_respond(*, mailbox: Mailbox, ical_text: str, partstat: str) -> CalendarEvent | None:
    """Answer a REQUEST: the event goes into the owner's calendar with their PARTSTAT (a later
    SEQUENCE replaces what is stored; DECLINED removes it), and a REPLY goes to the organizer, in
    one transaction: if the REPLY cannot be sent, nothing changes. Returns the stored event (None
    after a decline)."""

    calendar_gate(mailbox)

    if partstat not in ANSWERS:
        raise InvitationInvalid("Answer accepted, tentative or declined.")
    invitation = _invitation(ical_text, "REQUEST")
    addresses = mailbox_addresses(mailbox)
    me = invitation.attendee(addresses)
    if me is None:
        raise InvitationInvalid("You are not on this invitation's list of attendees.")
    if not invitation.organizer or invitation.organizer in addresses:
        raise InvitationInvalid("This invitation has no organizer to answer.")
    calendar = services.calendar_for(account=mailbox.account, mailbox=mailbox)
    existing = CalendarEvent.objects.select_for_update().filter(calendar=calendar, uid=invitation.uid).first()
    if existing is not None and existing.sequence > invitation.sequence:
        raise InvitationStale("Your calendar has a later version of this event; answer the latest invitation.")
    if existing is not None and existing.organizer and existing.organizer != invitation.organizer:
        raise InvitationInvalid("An event with this UID from another organizer is in your calendar already.")
    event = None
    if partstat == "DECLINED":
        if existing is not None and invitation.recurrence_id is None:
            services.event_delete(event=existing)
        elif existing is not None and existing.recurrence:  # one occurrence declined: the series stays
            text = _with_partstat(_merge_occurrence(existing.ical, ical_text), attendee=me["email"],
                                  partstat=partstat, recurrence_id=invitation.recurrence_id, drop_method=True)
            event, _ = services.event_put(calendar=calendar, href=existing.href, text=text)
    else:
        if existing is not None and invitation.recurrence_id is not None and existing.recurrence:
            base = _merge_occurrence(existing.ical, ical_text)
        else:
            base = ical_text
        text = _with_partstat(base, attendee=me["email"], partstat=partstat, drop_method=True)
        href = existing.href if existing else hashlib.sha256(invitation.uid.encode()).hexdigest()[:32] + ".ics"
        try:
            event, _ = services.event_put(calendar=calendar, href=href, text=text)
        except (services.EventInvalid, services.EventConflict) as exc:
            raise InvitationInvalid(f"The event cannot be put in your calendar: {exc.detail}") from exc
    name = mailbox.display_name or me.get("name") or ""
    reply = reply_text(invitation, attendee=me["email"], attendee_name=name, partstat=partstat)
    who = name or me["email"]
    when = when_text(invitation.start, invitation.end, all_day=invitation.all_day, tz_name=invitation.timezone)
    bodies = imip_bodies(lead=f"{who} has {ANSWERS[partstat]} your invitation:", title=invitation.title, when=when,
                     repeats="", location=invitation.location, description="", attendees=[],
                     footer="Your calendar program records the answer from the attached reply.")
    imip_send(mailbox, to=invitation.organizer, subject=f"{SUBJECT_VERBS[partstat]}: {invitation.title} @ {when}",
          bodies=bodies, method="REPLY", text=reply, strict=True)
    return event


@transaction.atomic
def invitation_cancel_apply(*, mailbox: Mailbox, ical_text: str) -> bool:
    """A CANCEL from the event's organizer: the event (or the cancelled occurrence) leaves the
    owner's calendar. Returns whether anything was removed."""
    from calendars import services

    calendar_gate(mailbox)

    invitation = _invitation(ical_text, "CANCEL")
    addresses = mailbox_addresses(mailbox)
    if invitation.attendee(addresses) is None:
        raise InvitationInvalid("You are not on this cancellation's list of attendees.")
    event = CalendarEvent.objects.filter(calendar__mailbox=mailbox, uid=invitation.uid).first()
    if event is None:
        return False
    if event.organizer != invitation.organizer or invitation.organizer in addresses:
        raise InvitationInvalid("Only the event's organizer can cancel it.")
    if invitation.recurrence_id is not None and event.recurrence:
        services.event_delete(event=event, occurrence=invitation.recurrence_id)
    else:
        services.event_delete(event=event)
    return True


@transaction.atomic
def invitation_reply_record(*, mailbox: Mailbox, ical_text: str) -> CalendarEvent:
    """An attendee's REPLY to the owner's own event: their PARTSTAT on the stored event, without a new
    SEQUENCE (an answer changes nothing the other attendees are sent)."""
    from calendars import services

    calendar_gate(mailbox)

    invitation = _invitation(ical_text, "REPLY")
    addresses = mailbox_addresses(mailbox)
    if not invitation.attendees:
        raise InvitationInvalid("This reply names no attendee.")
    replier = invitation.attendees[0]
    event = CalendarEvent.objects.select_for_update().filter(calendar__mailbox=mailbox, uid=invitation.uid).first()
    if event is None or event.organizer not in addresses:
        raise InvitationInvalid("This reply is about an event you do not organize in your calendar.")
    if replier["email"] not in event.attendee_emails:
        raise InvitationInvalid(f"{replier['email']} is not an attendee of this event.")
    if replier["status"] not in ical.PARTSTATS:
        raise InvitationInvalid(f"{replier['status']!r} is not an answer to an invitation.")
    overridden = {ical._utc(v["RECURRENCE-ID"].dt) for v in ical.parse(event.ical).walk("VEVENT")
                  if "RECURRENCE-ID" in v}
    # An answer for one occurrence goes on its override; without one it stands for the series.
    occurrence = invitation.recurrence_id if invitation.recurrence_id in overridden else None
    text = _with_partstat(event.ical, attendee=replier["email"], partstat=replier["status"], recurrence_id=occurrence)
    stored, _ = services.event_put(calendar=event.calendar, href=event.href, text=text, if_match=event.etag)
    return stored
