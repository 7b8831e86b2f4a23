"""/calendar: the account's events (plan Pro or Premium). Reading needs `calendar:read`, changing
`calendar:write`. An event lives in one of the account's own calendars (`mailbox` null) or of one of
its managed mailboxes (those its owner sees in webmail and on the phone): the default one unless
`calendar_id` names another (see /calendar/calendars)."""
from datetime import UTC, date, datetime, time, timedelta

from zoneinfo import available_timezones

from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import page_query
from api.permissions import request_account
from api.inputs import StrictInput
from api.views.contacts import MAILBOX_HELP, managed_mailbox
from calendars import ical
from calendars.models import Calendar, CalendarEvent
from calendars.recurrence import series_occurs_between
from calendars.selectors import calendar_get, event_get, event_list
from calendars.services import calendar_for, event_create, event_delete, event_move, event_update
from mailcore.paging import page_window

MAX_ATTENDEES = 100
MAX_DESCRIPTION = 10_000


@extend_schema_field({"type": "string", "format": "rrule", "maxLength": 255})
class RruleField(serializers.CharField):
    """An RFC 5545 RRULE value (`format: rrule`): its grammar is more than a pattern can state, so
    the schema names it and the API parses it (a rule without an occurrence is refused too)."""


COLOR = serializers.RegexField(r"^#[0-9a-fA-F]{6}\Z", max_length=7, required=False, allow_blank=True,
                               help_text="#rrggbb (stored lower-cased); empty: the calendar's colour.")
READ_WRITE = {"GET": "calendar:read", "POST": "calendar:write", "PATCH": "calendar:write",
              "DELETE": "calendar:write"}
GATE = "Plan Pro or Premium (else 403 naming the plan)."
TIMES = ("ISO 8601 with `Z` or an offset; a time without either is UTC. All-day events take the dates of "
         "start and end (end exclusive, at least one day).")


def _datetime_field(**options) -> serializers.DateTimeField:
    return serializers.DateTimeField(default_timezone=UTC, **options)


class EventUpdateInput(StrictInput):
    """Changes to an event (the whole series): only the fields sent change; any other key is a 422."""

    refused = {"mailbox": "An event stays with its mailbox; `calendar_id` moves it among that mailbox's calendars.",
               **{name: "Read-only." for name in ("id", "uid", "organizer", "attendee_status", "sequence",
                                                   "created_at", "updated_at")}}

    title = serializers.CharField(max_length=255, required=False)
    start = _datetime_field(required=False, help_text=TIMES)
    end = _datetime_field(required=False, help_text="Not before start. " + TIMES)
    all_day = serializers.BooleanField(required=False)
    description = serializers.CharField(max_length=MAX_DESCRIPTION, required=False, allow_blank=True,
                                        trim_whitespace=False)
    location = serializers.CharField(max_length=255, required=False, allow_blank=True)
    color = COLOR
    attendees = serializers.ListField(
        child=serializers.EmailField(max_length=320), max_length=MAX_ATTENDEES, required=False,
        help_text=f"Email addresses (at most {MAX_ATTENDEES}); replaces the list, keeping known replies. Attendees "
        "of an event in a mailbox's calendar get invitations from that mailbox.")
    recurrence = RruleField(
        max_length=255, required=False, allow_blank=True,
        help_text="An RFC 5545 RRULE value, e.g. FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10; empty: one occurrence. "
        "Occurrences repeat in the event's timezone.")
    timezone = serializers.ChoiceField(
        choices=["", *sorted(available_timezones())], required=False, allow_blank=True,
        error_messages={"invalid_choice": "Not an IANA time zone name."},
        help_text="IANA zone name (e.g. Europe/Berlin) the event is written and repeats in; empty: UTC.")

    calendar_id = serializers.IntegerField(
        required=False, help_text="Move it to this calendar of the same mailbox (or of the account, for the "
        "account's own); it must hold events.")

    def validate_calendar_id(self, value: int) -> Calendar:
        return event_calendar(self.context["account"], value)

    def validate_color(self, value: str) -> str:
        return value.lower()

    def validate_attendees(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(address.lower() for address in value))

    def validate_timezone(self, value: str) -> str:
        try:
            ical.zone(value)
        except ical.ICalError:
            raise serializers.ValidationError("Not an IANA time zone name.") from None
        return value

    def validate(self, attrs):
        event = self.context.get("event")
        start = attrs.get("start", event.start if event else None)
        end = attrs.get("end", event.end if event else None)
        if start is not None and end is not None and end < start and ("start" in attrs or "end" in attrs):
            raise serializers.ValidationError({"end": ["The end may not be before the start."]})
        rule = attrs["recurrence"] if "recurrence" in attrs else (event.recurrence if event else "")
        if rule and start is not None and ("recurrence" in attrs or "start" in attrs):
            try:
                rule = ical.rrule_check(rule, start)
            except ical.ICalError as exc:
                raise serializers.ValidationError(
                    {"recurrence": [f"{exc} Expected an RFC 5545 RRULE value (e.g. FREQ=WEEKLY;BYDAY=MO,WE;COUNT=10)."]}
                ) from None
            if "recurrence" in attrs:
                attrs["recurrence"] = rule
        return attrs


class EventInput(EventUpdateInput):
    """A new event; any key not listed here is a 422."""

    refused = {name: why for name, why in EventUpdateInput.refused.items() if name != "mailbox"}

    title = serializers.CharField(max_length=255)
    start = _datetime_field(help_text=TIMES)
    end = _datetime_field(help_text="Not before start. " + TIMES)
    all_day = serializers.BooleanField(required=False, default=False)
    mailbox = serializers.EmailField(max_length=320, required=False, allow_null=True, help_text=MAILBOX_HELP)
    calendar_id = serializers.IntegerField(
        required=False, help_text="The calendar to put it in (it must hold events); without it the default "
        "calendar of `mailbox` (or the account). Not with mailbox.")

    def validate_mailbox(self, value: str | None):
        return managed_mailbox(self.context["account"], value)

    def validate(self, attrs):
        if "calendar_id" in attrs and attrs.get("mailbox") is not None:
            raise serializers.ValidationError({"mailbox": ["Give calendar_id or mailbox, not both."]})
        return super().validate(attrs)


def event_calendar(account, calendar_id: int) -> Calendar:
    """The account's calendar of this id that holds events; a 422 otherwise."""
    try:
        calendar = calendar_get(account=account, calendar_id=calendar_id)
    except Calendar.DoesNotExist:
        raise serializers.ValidationError("Not a calendar of this account.") from None
    if not calendar.holds(CalendarEvent.Component.EVENT):
        raise serializers.ValidationError("That calendar holds tasks only.")
    return calendar


class EventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    uid = serializers.CharField(help_text="The iCalendar UID (stable; what invitations and CalDAV clients carry).")
    title = serializers.CharField()
    start = serializers.DateTimeField(help_text="UTC; midnight of the first day for all-day events.")
    end = serializers.DateTimeField(help_text="UTC, exclusive; midnight after the last day for all-day events.")
    all_day = serializers.BooleanField()
    description = serializers.CharField()
    location = serializers.CharField()
    color = serializers.CharField(help_text="#rrggbb, or empty for the calendar's colour.")
    attendees = serializers.SerializerMethodField()
    attendee_status = serializers.SerializerMethodField()
    organizer = serializers.SerializerMethodField()
    recurrence = serializers.CharField(help_text="The RRULE value; empty: one occurrence.")
    timezone = serializers.CharField(help_text="IANA zone; empty: UTC.")
    sequence = serializers.IntegerField(help_text="iCalendar SEQUENCE: raised by every change.")
    mailbox = serializers.SerializerMethodField(
        help_text="The mailbox whose calendar holds it; null: the account's own.")
    calendar_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_attendees(self, event) -> list[str]:
        return event.attendee_emails

    @extend_schema_field(serializers.DictField(child=serializers.ChoiceField(choices=ical.PARTSTATS)))
    def get_attendee_status(self, event) -> dict[str, str]:
        return {attendee["email"]: attendee.get("status") or "NEEDS-ACTION" for attendee in event.attendees}

    def get_organizer(self, event) -> str | None:
        return event.organizer or None

    def get_mailbox(self, event) -> str | None:
        return event.calendar.mailbox.address if event.calendar.mailbox_id else None


class EventPageOutput(serializers.Serializer):
    events = EventOutput(many=True)
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    per_page = serializers.IntegerField()


def _moment(value: str, *, upper: bool) -> datetime:
    """An ISO 8601 date (its midnight UTC; as the upper bound, the midnight after it, so the day is
    included) or datetime (without `Z` or an offset: UTC)."""
    value = value.strip()
    if len(value) == 10:
        try:
            day = date.fromisoformat(value)
        except ValueError:
            pass
        else:
            return datetime.combine(day + timedelta(days=1) if upper else day, time(), tzinfo=UTC)
    try:
        moment = parse_datetime(value)
    except ValueError:
        moment = None
    if moment is None:
        raise serializers.ValidationError("Not an ISO 8601 date or datetime.")
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class _EventListQuery(page_query(default_size=50, max_size=100, name="EventPageQuery")):
    mailbox = serializers.EmailField(max_length=320, required=False,
                                     help_text="Only this managed mailbox's calendar; without it every calendar "
                                     "of the account.")

    calendar_id = serializers.IntegerField(required=False, min_value=1, help_text="Only this calendar's events.")

    def validate_mailbox(self, value: str):
        return managed_mailbox(self.context["account"], value)

    def validate_calendar_id(self, value: int) -> Calendar:
        return event_calendar(self.context["account"], value)

    def validate_from(self, value: str) -> datetime:
        return _moment(value, upper=False)

    def validate_to(self, value: str) -> datetime:
        return _moment(value, upper=True)

    def validate(self, attrs):
        # Compared as written: from=2026-05-02&to=2026-05-01 is backwards although 2 May 00:00 ends the `to` day.
        if attrs.get("from") and attrs.get("to") and attrs["from"] > _moment(self.initial_data["to"], upper=False):
            raise serializers.ValidationError({"from": ["Must not be after to."]})
        return attrs


@extend_schema_field({"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]})
class MomentField(serializers.CharField):
    """An ISO 8601 date or datetime, read by _moment (a date's midnight, or the end of its day)."""


EventListQuery = type("EventListQuery", (_EventListQuery,), {
    "from": MomentField(
        max_length=40, required=False,
        help_text="ISO 8601 date or datetime: events ending after it (a date: its midnight UTC; no offset: UTC)."),
    "to": MomentField(
        max_length=40, required=False,
        help_text="ISO 8601 date or datetime: events starting before it (a date includes that whole day, UTC)."),
})


class EventListCreateApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "calendar"

    @extend_schema(
        tags=["calendar"], operation_id="calendar_list", parameters=[EventListQuery],
        responses={200: EventPageOutput},
        summary="List events overlapping a range, by start (scope calendar:read)",
        description=f"{GATE} An event is listed when it overlaps [from, to): it ends after `from` and starts "
        "before `to`, so one that began before `from` and is still going is in. A repeating event is listed "
        "(once, as its series) when any occurrence overlaps. Every calendar of the account (its own and its "
        "mailboxes'), or one mailbox's. `from` after `to` is 422.")
    def get(self, request):
        account = request_account(request)
        query = EventListQuery(data=request.query_params, context={"account": account})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        start, end = params.get("from"), params.get("to")
        events = event_list(account=account, mailbox=params.get("mailbox"), calendar=params.get("calendar_id"),
                            start=start, end=end)
        if start is not None and end is not None:
            series = events.exclude(recurrence="").select_related(None).only("pk", "ical", "start", "range_end")
            events = events.exclude(pk__in=[event.pk for event in series
                                             if not series_occurs_between(event, start, end)])
        page, per_page = params["page"], params["per_page"]
        return Response(EventPageOutput({"events": page_window(events, page=page, size=per_page),
                                         "total": events.count(), "page": page, "per_page": per_page}).data)

    @extend_schema(tags=["calendar"], request=EventInput, responses={201: EventOutput},
                   summary="Create an event (scope calendar:write)",
                   description=f"{GATE} Without `timezone` the event takes its calendar's zone (a mailbox "
                   "owner's, else UTC).")
    def post(self, request):
        account = request_account(request)
        data = EventInput(data=request.data, context={"account": account})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        calendar = fields.pop("calendar_id", None) or calendar_for(account=account, mailbox=fields.pop("mailbox", None))
        fields.pop("mailbox", None)
        fields.setdefault("timezone", calendar.timezone)
        return Response(EventOutput(event_create(calendar=calendar, **fields)).data, status=201)


class EventDetailApi(APIView):
    required_scopes = READ_WRITE
    required_feature = "calendar"

    def _event(self, request, event_id: int):
        return event_get(account=request_account(request), event_id=event_id)

    @extend_schema(tags=["calendar"], responses={200: EventOutput, 404: OpenApiResponse(description="Not yours")},
                   summary="Fetch an event (scope calendar:read)", description=GATE)
    def get(self, request, event_id: int):
        return Response(EventOutput(self._event(request, event_id)).data)

    @extend_schema(tags=["calendar"], request=EventUpdateInput, responses={200: EventOutput},
                   summary="Change or move an event, the whole series (scope calendar:write)",
                   description=f"{GATE} Only the fields sent change; the rest of its iCalendar data (alarms, "
                   "changed occurrences) is kept. SEQUENCE goes up and attendees get the update. `calendar_id` "
                   "moves it to another calendar of the same mailbox (another mailbox's is a 422).")
    def patch(self, request, event_id: int):
        event = self._event(request, event_id)
        data = EventUpdateInput(data=request.data, context={"event": event, "account": request_account(request)})
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        target = fields.pop("calendar_id", None)
        if target is not None and target.mailbox_id != event.calendar.mailbox_id:
            raise serializers.ValidationError({"calendar_id": ["Must be a calendar of the same mailbox."]})
        if fields:  # an empty body changes nothing: no new SEQUENCE, no update to attendees
            event = event_update(event=event, **fields)
        if target is not None:
            event, _ = event_move(event=event, calendar=target)
        return Response(EventOutput(event).data)

    @extend_schema(tags=["calendar"], responses={204: None},
                   summary="Delete an event for good, the whole series (scope calendar:write)",
                   description=f"{GATE} Attendees get a cancellation.")
    def delete(self, request, event_id: int):
        event_delete(event=self._event(request, event_id))
        return Response(status=204)
