"""iMIP (RFC 6047, iTIP RFC 5546) both ways. Out: REQUEST, CANCEL and REPLY messages built from an
event's stored iCalendar text and sent through mail_send (quota, DKIM, the Sent copy, events),
each as multipart/alternative with a `text/calendar; method=...` part. In: the calendar part of a
message in the owner's mailbox read back as an Invitation, and what the owner does with it: answer
a REQUEST (the event goes into their calendar through event_put, a REPLY goes to the organizer),
remove a cancelled event, record an attendee's REPLY on the organizer's own event.

Nothing here trusts the request: the webmail hands over the calendar text of a message it read from
the owner's own store, and every answer checks that the owner is on the invitation."""
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import escape

import icalendar
from django.db import transaction

from mailcore.accounts.selectors import plan_gate_message
from calendars import ical
from calendars.models import Calendar, CalendarEvent
from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox
from mailcore.sending.inputs import SendRequest
from mailcore.sending.services import mail_send
from mailcore.store.base import StoreError, StoreUnavailable
from mailcore.store.factory import store_for
from mailcore.store.reading import parse as parse_message

log = logging.getLogger(__name__)

METHODS = ("REQUEST", "CANCEL", "REPLY")
ANSWERS = {"ACCEPTED": "accepted", "TENTATIVE": "tentatively accepted", "DECLINED": "declined"}
SUBJECT_VERBS = {"ACCEPTED": "Accepted", "TENTATIVE": "Tentative", "DECLINED": "Declined"}
CALENDAR_TYPES = ("text/calendar", "application/ics")


class InvitationInvalid(DomainError):
    code = ErrorCode.INVALID


class InvitationForbidden(DomainError):
    """The mailbox's plan has no calendar to put the event in."""
    code = ErrorCode.FORBIDDEN


def calendar_gate(mailbox: Mailbox) -> None:
    if not mailbox.effective_plan.has_feature("calendar"):
        raise InvitationForbidden(plan_gate_message("calendar"))


class InvitationStale(DomainError):
    """The owner's calendar already holds a later version of this event."""
    code = ErrorCode.CONFLICT


# Reading -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Invitation:
    """The event of an iMIP message as its recipient needs it (times in UTC, like the columns)."""
    method: str
    uid: str
    sequence: int
    title: str
    start: datetime
    end: datetime
    all_day: bool
    timezone: str
    location: str
    description: str
    recurrence: str
    organizer: str
    organizer_name: str
    attendees: list[dict]
    recurrence_id: datetime | None  # the occurrence this message is about; None: the whole event
    status: str  # STATUS of the VEVENT (CANCELLED on a CANCEL), upper case
    text: str = field(repr=False)  # the calendar part as it arrived

    def attendee(self, addresses: set[str]) -> dict | None:
        return next((attendee for attendee in self.attendees if attendee["email"] in addresses), None)


def invitation_parse(text: str) -> Invitation:
    """An iMIP calendar part, or ICalError: a METHOD we handle, VEVENTs of one UID."""
    calendar = ical.parse(text)
    method = str(calendar.get("METHOD", "")).strip().upper()
    if method not in METHODS:
        raise ical.ICalError(f"Not an invitation, cancellation or reply (METHOD {method or 'missing'}).")
    fields = ical.fields_of(calendar)
    event = ical.master(calendar)
    organizer = event.get("ORGANIZER")
    rid = event.get("RECURRENCE-ID")
    return Invitation(
        method=method, uid=fields.uid, sequence=fields.sequence, title=fields.title, start=fields.start,
        end=fields.end, all_day=fields.all_day, timezone=fields.timezone, location=fields.location,
        description=fields.description, recurrence=fields.recurrence, organizer=fields.organizer,
        organizer_name=str(organizer.params.get("CN", "")) if organizer is not None else "",
        attendees=fields.attendees, recurrence_id=ical._utc(rid.dt) if rid is not None else None,
        status=str(event.get("STATUS", "")).upper(), text=text)


def _calendar_part(raw: bytes) -> str | None:
    """The text of the message's iMIP part: a text/calendar leaf (the alternative), else an .ics file."""
    leaves = [part for part in parse_message(raw).walk() if not part.is_multipart()]
    found = [part for part in leaves if part.get_content_type() == "text/calendar"]
    found += [part for part in leaves if part.get_content_type() == "application/ics"]
    if not found:
        return None
    payload = found[0].get_payload(decode=True) or b""
    if len(payload) > ical.MAX_ICAL_BYTES:
        return None
    charset = found[0].get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


def invitation_in_message(raw: bytes) -> Invitation | None:
    """The invitation a message carries; None for any other message, or a calendar part we cannot read."""
    try:
        text = _calendar_part(raw)
        return invitation_parse(text) if text else None
    except Exception:  # noqa: BLE001 - hostile or broken calendar data only means: no card
        log.info("unreadable calendar part", exc_info=True)
        return None


def mailbox_addresses(mailbox: Mailbox) -> set[str]:
    """Every address whose mail reaches the mailbox: an invitation to an alias is the owner's too."""
    return {mailbox.address.lower(), *(address.lower() for address in mailbox.aliases.values_list("address", flat=True))}


@dataclass
class InvitationCard:
    """What the reading page shows about the invitation a message carries."""
    invitation: Invitation
    start: datetime  # in the owner's calendar time zone
    end: datetime
    timezone: str  # the zone shown, "UTC" when the calendar has none
    me: dict | None  # the owner as an attendee of a REQUEST or CANCEL
    event: CalendarEvent | None  # the owner's stored event of this UID
    replier: dict | None = None  # REPLY: the attendee who answered
    can_respond: bool = False
    can_remove: bool = False
    can_record: bool = False
    recorded: bool = False  # REPLY: the owner's event already shows this answer
    stale: bool = False  # the owner's calendar holds a later version
    organizer_is_me: bool = False  # the owner sent it (a copy in Sent, say)
    gate: str = ""  # why the owner's plan cannot answer (no calendar); "" when it can

    @property
    def my_status(self) -> str:
        if self.event is None or self.me is None:
            return ""
        mine = next((a for a in self.event.attendees if a["email"] == self.me["email"]), None)
        return mine["status"] if mine else ""

    @property
    def when(self) -> str:
        invitation = self.invitation
        return when_text(invitation.start, invitation.end, all_day=invitation.all_day,
                         tz_name="" if self.timezone == "UTC" else self.timezone)

    @property
    def repeats(self) -> str:
        return recurrence_text(self.invitation.recurrence)

    @property
    def replier_answer(self) -> str:
        return ANSWERS.get(self.replier["status"], self.replier["status"].lower()) if self.replier else ""


def _stored(mailbox: Mailbox, uid: str) -> CalendarEvent | None:
    return CalendarEvent.objects.filter(calendar__mailbox=mailbox, uid=uid).select_related("calendar").first()


def invitation_card(*, mailbox: Mailbox, folder: str, uid: int) -> InvitationCard | None:
    """The card for a message of the owner's mailbox, or None (no such message, no invitation, or not
    readable). StoreUnavailable is raised: the caller says the mail server could not be reached."""
    try:
        raw = store_for(mailbox).fetch(folder, uid).raw
    except StoreUnavailable:
        raise
    except StoreError:
        return None
    invitation = invitation_in_message(raw)
    if invitation is None:
        return None
    calendar = Calendar.objects.filter(mailbox=mailbox).first()
    tz_name = calendar.timezone if calendar and calendar.timezone else ""
    try:
        shown_zone = ical.zone(tz_name)
    except ical.ICalError:
        tz_name, shown_zone = "", UTC
    addresses = mailbox_addresses(mailbox)
    event = _stored(mailbox, invitation.uid)
    card = InvitationCard(
        invitation=invitation, timezone=tz_name or "UTC", me=invitation.attendee(addresses), event=event,
        start=invitation.start if invitation.all_day else invitation.start.astimezone(shown_zone),
        end=invitation.end if invitation.all_day else invitation.end.astimezone(shown_zone))
    organizer_is_me = invitation.organizer in addresses
    card.organizer_is_me = organizer_is_me
    if not mailbox.effective_plan.has_feature("calendar"):
        card.gate = plan_gate_message("calendar")
        return card
    if invitation.method == "REQUEST":
        card.stale = event is not None and event.sequence > invitation.sequence
        card.can_respond = card.me is not None and not organizer_is_me and not card.stale
    elif invitation.method == "CANCEL":
        card.can_remove = (card.me is not None and event is not None and event.organizer == invitation.organizer
                           and not organizer_is_me)
    elif invitation.method == "REPLY" and invitation.attendees:
        card.replier = invitation.attendees[0]
        mine = event is not None and event.organizer in addresses and organizer_is_me
        listed = mine and next((a for a in event.attendees if a["email"] == card.replier["email"]), None)
        card.can_record = bool(listed) and listed["status"] != card.replier["status"]
        card.recorded = bool(listed) and listed["status"] == card.replier["status"]
    return card


# Building ------------------------------------------------------------------------------------------

def _new_calendar(method: str) -> icalendar.Calendar:
    calendar = icalendar.Calendar()
    calendar.add("prodid", ical.PRODID)
    calendar.add("version", "2.0")
    calendar.add("method", method)
    return calendar


def _organizer(event, address: str, name: str) -> None:
    event.pop("ORGANIZER", None)
    event.add("ORGANIZER", f"mailto:{address}", parameters={"CN": name} if name else None)


def request_text(event: CalendarEvent, *, organizer: str, organizer_name: str) -> str:
    """METHOD:REQUEST for the whole resource (master and overridden occurrences, its time zones);
    the owner's alarms stay out, every attendee is asked to answer."""
    stored = icalendar.Calendar.from_ical(event.ical)
    out = _new_calendar("REQUEST")
    for component in stored.subcomponents:
        if component.name == "VTIMEZONE":
            out.add_component(component)
        elif component.name == "VEVENT":
            component.subcomponents = [sub for sub in component.subcomponents if sub.name != "VALARM"]
            _organizer(component, organizer, organizer_name)
            for attendee in ical._as_list(component.get("ATTENDEE")):
                attendee.params["RSVP"] = "TRUE"
            component.pop("DTSTAMP", None)
            component.add("DTSTAMP", datetime.now(UTC))
            out.add_component(component)
    return out.to_ical().decode()


def _zones_of(text: str) -> list:
    return icalendar.Calendar.from_ical(text).walk("VTIMEZONE")


def _value(moment: datetime, *, all_day: bool, tz_name: str):
    if all_day:
        return moment.astimezone(UTC).date()
    return moment.astimezone(ical.zone(tz_name))


def cancel_text(event: CalendarEvent, *, organizer: str, organizer_name: str, attendees: list[dict],
                sequence: int, occurrence: datetime | None = None) -> str:
    """METHOD:CANCEL with STATUS:CANCELLED for the listed attendees: the whole event, or with
    `occurrence` (its original start) that one occurrence as its RECURRENCE-ID."""
    out = _new_calendar("CANCEL")
    for zone in _zones_of(event.ical):
        out.add_component(zone)
    vevent = icalendar.Event()
    vevent.add("UID", event.uid)
    vevent.add("SEQUENCE", sequence)
    vevent.add("DTSTAMP", datetime.now(UTC))
    vevent.add("SUMMARY", event.title)
    start, end = event.start, event.end
    if occurrence is not None:
        start, end = occurrence, occurrence + (event.end - event.start)
        vevent.add("RECURRENCE-ID", _value(occurrence, all_day=event.all_day, tz_name=event.timezone))
    vevent.add("DTSTART", _value(start, all_day=event.all_day, tz_name=event.timezone))
    vevent.add("DTEND", _value(end, all_day=event.all_day, tz_name=event.timezone))
    if event.location:
        vevent.add("LOCATION", event.location)
    _organizer(vevent, organizer, organizer_name)
    for attendee in attendees:
        parameters = {"ROLE": "REQ-PARTICIPANT", "PARTSTAT": "NEEDS-ACTION"}
        if attendee.get("name"):
            parameters["CN"] = attendee["name"]
        vevent.add("ATTENDEE", f"mailto:{attendee['email']}", parameters=parameters)
    vevent.add("STATUS", "CANCELLED")
    out.add_component(vevent)
    out.add_missing_timezones()
    return out.to_ical().decode()


def reply_text(invitation: Invitation, *, attendee: str, attendee_name: str, partstat: str) -> str:
    """METHOD:REPLY: the same UID, SEQUENCE and RECURRENCE-ID, with only the answering attendee."""
    received = ical.parse(invitation.text)
    source = ical.master(received)
    out = _new_calendar("REPLY")
    for zone in received.walk("VTIMEZONE"):
        out.add_component(zone)
    vevent = icalendar.Event()
    for name in ("UID", "SEQUENCE", "RECURRENCE-ID", "DTSTART", "DTEND", "DURATION", "SUMMARY", "ORGANIZER"):
        if name in source:
            vevent[name] = source[name]
    vevent.add("DTSTAMP", datetime.now(UTC))
    parameters = {"PARTSTAT": partstat}
    if attendee_name:
        parameters["CN"] = attendee_name
    vevent.add("ATTENDEE", f"mailto:{attendee}", parameters=parameters)
    out.add_component(vevent)
    return out.to_ical().decode()


# Words for people ----------------------------------------------------------------------------------

def _day(moment) -> str:
    return f"{moment:%a} {moment.day} {moment:%b %Y}"


def when_text(start: datetime, end: datetime, *, all_day: bool, tz_name: str) -> str:
    """"Tue 1 Dec 2026, 09:00–10:00 (Europe/Berlin)", or the days of an all-day event."""
    if all_day:
        first, last = start.astimezone(UTC).date(), (end - timedelta(days=1)).astimezone(UTC).date()
        return f"{_day(first)} (all day)" if last <= first else f"{_day(first)} – {_day(last)} (all day)"
    try:
        shown = ical.zone(tz_name)
    except ical.ICalError:
        tz_name, shown = "", UTC
    begin, finish = start.astimezone(shown), end.astimezone(shown)
    label = tz_name or "UTC"
    if begin.date() == finish.date():
        return f"{_day(begin)}, {begin:%H:%M}–{finish:%H:%M} ({label})"
    return f"{_day(begin)} {begin:%H:%M} – {_day(finish)} {finish:%H:%M} ({label})"


FREQUENCIES = {"DAILY": "daily", "WEEKLY": "weekly", "MONTHLY": "monthly", "YEARLY": "yearly"}
DAYS = {"MO": "Mon", "TU": "Tue", "WE": "Wed", "TH": "Thu", "FR": "Fri", "SA": "Sat", "SU": "Sun"}


def recurrence_text(rule: str) -> str:
    """A readable line for the common RRULEs ("weekly on Mon, Wed, 10 times"); the rule itself otherwise."""
    if not rule:
        return ""
    parts = dict(item.split("=", 1) for item in rule.split(";") if "=" in item)
    frequency = FREQUENCIES.get(parts.get("FREQ", ""))
    if frequency is None:
        return rule
    interval = parts.get("INTERVAL", "1")
    unit = {"daily": "days", "weekly": "weeks", "monthly": "months", "yearly": "years"}[frequency]
    words = f"every {interval} {unit}" if interval.isdigit() and int(interval) > 1 else frequency
    if parts.get("BYDAY"):
        words += " on " + ", ".join(DAYS.get(day[-2:], day) for day in parts["BYDAY"].split(","))
    if parts.get("COUNT"):
        words += f", {parts['COUNT']} times"
    elif len(parts.get("UNTIL", "")) >= 8:
        until = parts["UNTIL"]
        words += f", until {until[:4]}-{until[4:6]}-{until[6:8]}"
    return words


def _one_line(text: str) -> str:
    return " ".join(text.split())


def imip_bodies(*, lead: str, title: str, when: str, repeats: str, location: str, description: str,
            attendees: list[dict], footer: str) -> tuple[str, str]:
    rows = [("When", when)]
    if repeats:
        rows.append(("Repeats", repeats))
    if location:
        rows.append(("Where", location))
    if attendees:
        rows.append(("Who", ", ".join(a["email"] for a in attendees)))
    text = [lead, "", title, *(f"{label}: {value}" for label, value in rows)]
    if description:
        text += ["", description]
    text += ["", footer]
    html_rows = "".join(f'<tr><th align="left" style="padding:2px 12px 2px 0;color:#475467">{escape(label)}</th>'
                        f"<td>{escape(value)}</td></tr>" for label, value in rows)
    html = (f"<p>{escape(lead)}</p><h2 style=\"margin:0 0 8px\">{escape(title)}</h2>"
            f"<table>{html_rows}</table>")
    if description:
        html += "<p>" + escape(description).replace("\n", "<br>") + "</p>"
    html += f'<p style="color:#475467">{escape(footer)}</p>'
    return "\n".join(text) + "\n", html


def imip_send(mailbox: Mailbox, *, to: str, subject: str, bodies: tuple[str, str], method: str, text: str,
          strict: bool = False) -> bool:
    """One iMIP message through mail_send, in a savepoint: a refused send (bad address, quota) is
    logged and skipped unless `strict`, and never spoils the caller's transaction."""
    body_text, body_html = bodies
    request = SendRequest(from_email=mailbox.address, to=[to], subject=_one_line(subject)[:255],
                          body_text=body_text, body_html=body_html, calendar=(method, text))
    try:
        with transaction.atomic():
            mail_send(account=mailbox.account, user=None, request=request)
    except DomainError as exc:
        if strict:
            raise
        log.warning("iMIP %s from %s to %s not sent: %s", method, mailbox.address, to, exc)
        return False
    return True


def _organizer_name(mailbox: Mailbox) -> str:
    return mailbox.display_name or mailbox.address


def _when_of(event: CalendarEvent, start: datetime | None = None) -> str:
    start = start or event.start
    return when_text(start, start + (event.end - event.start), all_day=event.all_day, tz_name=event.timezone)


def requests_send(event: CalendarEvent, *, mailbox: Mailbox, attendees: list[dict], updated: bool) -> int:
    """A REQUEST to each attendee, one message each; returns how many were accepted for sending."""
    if not attendees:
        return 0
    name = _organizer_name(mailbox)
    text = request_text(event, organizer=mailbox.address, organizer_name=name)
    when = _when_of(event)
    bodies = imip_bodies(
        lead=f"{name} updated the invitation to:" if updated else f"{name} invites you to:",
        title=event.title, when=when, repeats=recurrence_text(event.recurrence), location=event.location,
        description=event.description, attendees=event.attendees,
        footer="Answer from your calendar program or webmail; the invitation is attached as invite.ics.")
    subject = f"{'Updated invitation' if updated else 'Invitation'}: {event.title} @ {when}"
    return sum(imip_send(mailbox, to=attendee["email"], subject=subject, bodies=bodies, method="REQUEST", text=text)
               for attendee in attendees)


def cancels_send(event: CalendarEvent, *, mailbox: Mailbox, attendees: list[dict], sequence: int,
                 occurrence: datetime | None = None) -> int:
    """A CANCEL to each of these attendees (each message lists only its recipient)."""
    name = _organizer_name(mailbox)
    when = _when_of(event, occurrence)
    subject = f"Cancelled: {event.title} @ {when}"
    lead = f"{name} cancelled {'this occurrence of ' if occurrence else ''}the event:"
    sent = 0
    for attendee in attendees:
        text = cancel_text(event, organizer=mailbox.address, organizer_name=name, attendees=[attendee],
                           sequence=sequence, occurrence=occurrence)
        bodies = imip_bodies(lead=lead, title=event.title, when=when, repeats="", location=event.location,
                         description="", attendees=[], footer="Your calendar program can remove it for you.")
        sent += imip_send(mailbox, to=attendee["email"], subject=subject, bodies=bodies, method="CANCEL", text=text)
    return sent


# Answering -----------------------------------------------------------------------------------------
