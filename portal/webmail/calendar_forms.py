"""The webmail calendar's forms: an event (times in the calendar's zone, a recurrence preset turned
into an RRULE and read back from one, the calendar it goes in), the calendar's settings, the .ics
import, a calendar of the mailbox's (name, colour, what it holds) and a task."""
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import available_timezones

import icalendar
from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from calendars import ical

WEEKDAYS = [("MO", "Mon"), ("TU", "Tue"), ("WE", "Wed"), ("TH", "Thu"), ("FR", "Fri"), ("SA", "Sat"), ("SU", "Sun")]
WEEKDAY_NAMES = {"MO": "Monday", "TU": "Tuesday", "WE": "Wednesday", "TH": "Thursday", "FR": "Friday",
                 "SA": "Saturday", "SU": "Sunday"}
SWATCHES = [("#2563eb", "Blue"), ("#16a34a", "Green"), ("#dc2626", "Red"), ("#ea580c", "Orange"),
            ("#ca8a04", "Yellow"), ("#9333ea", "Purple"), ("#db2777", "Pink"), ("#475569", "Grey")]
HEX = re.compile(r"^#[0-9a-fA-F]{6}$")
FREQS = {"daily": "DAILY", "weekly": "WEEKLY", "monthly": "MONTHLY", "yearly": "YEARLY"}
MAX_IMPORT_BYTES = 5 * 1024 * 1024
FIRST_YEAR, LAST_YEAR = 1900, 2200  # dates the pages accept (far ones overflow time zone arithmetic)


@dataclass
class Recurrence:
    """A recurrence as the form's presets say it; `repeat` is "custom" when no preset can."""
    repeat: str = "none"
    interval: int = 1
    weekdays: tuple[str, ...] = ()
    ends: str = "never"
    count: int | None = None
    until: date | None = None


def recurrence_parse(rule: str, *, zone, all_day: bool) -> Recurrence:
    """Read an RRULE back into the presets (UNTIL as a day in `zone`), or "custom"."""
    if not rule:
        return Recurrence()
    try:
        recur = icalendar.vRecur.from_ical(rule)
    except ValueError:
        return Recurrence(repeat="custom")
    parts = {key.upper(): value for key, value in recur.items()}
    freq = str(parts.pop("FREQ", [""])[0]).upper()
    interval = int(parts.pop("INTERVAL", [1])[0])
    parts.pop("WKST", None)
    byday = [str(day).upper() for day in parts.pop("BYDAY", [])]
    count, until = parts.pop("COUNT", [None])[0], parts.pop("UNTIL", [None])[0]
    preset = next((name for name, value in FREQS.items() if value == freq), None)
    days = {code for code, _ in WEEKDAYS}
    if (preset is None or parts or (count is not None and until is not None) or interval < 1
            or (byday and (preset != "weekly" or not set(byday) <= days))):
        return Recurrence(repeat="custom")
    result = Recurrence(repeat=preset, interval=interval,
                        weekdays=tuple(code for code, _ in WEEKDAYS if code in byday))
    if count is not None:
        result.ends, result.count = "count", int(count)
    elif until is not None:
        if isinstance(until, datetime):
            moment = until if until.tzinfo else until.replace(tzinfo=UTC)
            result.ends, result.until = "until", (moment.astimezone(UTC).date() if all_day
                                                  else moment.astimezone(zone).date())
        else:
            result.ends, result.until = "until", until
    return result


def recurrence_build(recurrence: Recurrence, *, zone, all_day: bool) -> str:
    """The RRULE value of a preset: FREQ, INTERVAL (when not 1), BYDAY, then COUNT or UNTIL (the end of
    the chosen day in `zone`, as UTC; a date for all-day events, as RFC 5545 wants)."""
    if recurrence.repeat not in FREQS:
        return ""
    parts = [f"FREQ={FREQS[recurrence.repeat]}"]
    if recurrence.interval > 1:
        parts.append(f"INTERVAL={recurrence.interval}")
    if recurrence.repeat == "weekly" and recurrence.weekdays:
        parts.append("BYDAY=" + ",".join(code for code, _ in WEEKDAYS if code in recurrence.weekdays))
    if recurrence.ends == "count" and recurrence.count:
        parts.append(f"COUNT={recurrence.count}")
    elif recurrence.ends == "until" and recurrence.until:
        if all_day:
            parts.append(f"UNTIL={recurrence.until:%Y%m%d}")
        else:
            last = datetime.combine(recurrence.until, time(23, 59, 59), tzinfo=zone).astimezone(UTC)
            parts.append(f"UNTIL={last:%Y%m%dT%H%M%SZ}")
    return ";".join(parts)


def recurrence_text(rule: str, *, zone, all_day: bool) -> str:
    """The rule in words for the event's page."""
    recurrence = recurrence_parse(rule, zone=zone, all_day=all_day)
    if recurrence.repeat == "none":
        return ""
    if recurrence.repeat == "custom":
        return f"Repeats by its own rule ({rule})"
    unit = {"daily": "day", "weekly": "week", "monthly": "month", "yearly": "year"}[recurrence.repeat]
    words = (f"Every {recurrence.interval} {unit}s" if recurrence.interval > 1
             else {"daily": "Daily", "weekly": "Weekly", "monthly": "Monthly", "yearly": "Yearly"}[recurrence.repeat])
    if recurrence.weekdays:
        words += " on " + ", ".join(WEEKDAY_NAMES[day] for day in recurrence.weekdays)
    if recurrence.ends == "count":
        words += f", {recurrence.count} time{'s' if recurrence.count != 1 else ''}"
    elif recurrence.ends == "until":
        words += f", until {recurrence.until:%a %-d %b %Y}"
    return words


def split_addresses(value: str) -> list[str]:
    return [item.strip() for item in re.split(r"[,;\n\r]+", value or "") if item.strip()]


class EventForm(forms.Form):
    """One event or one occurrence. Times are read in the calendar's zone; an all-day event's end day
    is the last day it covers (stored exclusive, as iCalendar wants)."""

    scope = forms.ChoiceField(label="Change", widget=forms.RadioSelect, required=False, initial="this",
                              choices=[("this", "This event"), ("all", "All events in the series")])
    title = forms.CharField(max_length=255)
    calendar = forms.TypedChoiceField(label="Calendar", coerce=int, required=False)
    all_day = forms.BooleanField(label="All day", required=False)
    start_date = forms.DateField(label="Starts", widget=forms.DateInput(attrs={"type": "date"}))
    start_time = forms.TimeField(label="Start time", required=False, widget=forms.TimeInput(attrs={"type": "time"}))
    end_date = forms.DateField(label="Ends", widget=forms.DateInput(attrs={"type": "date"}))
    end_time = forms.TimeField(label="End time", required=False, widget=forms.TimeInput(attrs={"type": "time"}))
    location = forms.CharField(max_length=255, required=False)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    color = forms.ChoiceField(label="Colour", required=False, widget=forms.RadioSelect,
                              choices=[("", "Calendar colour"), *SWATCHES, ("custom", "Other")])
    custom_color = forms.CharField(label="Other colour", required=False, max_length=7,
                                   help_text="#rrggbb, for example #0f766e.",
                                   widget=forms.TextInput(attrs={"placeholder": "#rrggbb", "size": 9}))
    attendees = forms.CharField(label="Guests", required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                help_text="Email addresses, separated by commas or new lines. They get an invitation.")
    repeat = forms.ChoiceField(label="Repeat", initial="none", choices=[
        ("none", "Does not repeat"), ("daily", "Daily"), ("weekly", "Weekly"), ("monthly", "Monthly"),
        ("yearly", "Yearly")])
    interval = forms.IntegerField(label="Every", min_value=1, max_value=99, initial=1,
                                  help_text="1 is every day / week / month / year, 2 every other one.")
    weekdays = forms.MultipleChoiceField(label="On", choices=WEEKDAYS, required=False,
                                         widget=forms.CheckboxSelectMultiple)
    ends = forms.ChoiceField(label="Ends", widget=forms.RadioSelect, initial="never", choices=[
        ("never", "Never"), ("count", "After a number of times"), ("until", "On a date")])
    count = forms.IntegerField(label="Times", min_value=1, max_value=999, required=False)
    until = forms.DateField(label="Last day", required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, zone=UTC, occurrence: bool = False, custom_rule: str = "", calendars=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.zone = zone
        self.calendars = {calendar.pk: calendar for calendar in calendars}
        if len(self.calendars) > 1:
            self.fields["calendar"].choices = [(pk, calendar.name) for pk, calendar in self.calendars.items()]
            self.fields["calendar"].required = True
        else:
            del self.fields["calendar"]
        self.occurrence = occurrence
        self.custom_rule = custom_rule
        if not occurrence:
            del self.fields["scope"]
        if custom_rule:
            self.fields["repeat"].choices = [*self.fields["repeat"].choices,
                                             ("custom", f"Keep its own rule ({custom_rule})")]

    def chosen_calendar(self, default):
        """The calendar picked (only shown when the mailbox has more than one for events), else `default`."""
        return self.calendars.get(self.cleaned_data.get("calendar"), default)

    def clean_custom_color(self):
        value = self.cleaned_data["custom_color"].strip()
        if value and not HEX.match(value):
            raise ValidationError("A colour is # and six hex digits, for example #0f766e.")
        return value.lower()

    def clean_attendees(self):
        addresses, bad = [], []
        for address in split_addresses(self.cleaned_data["attendees"]):
            try:
                validate_email(address)
            except ValidationError:
                bad.append(address)
            else:
                if address.lower() not in addresses:
                    addresses.append(address.lower())
        if bad:
            raise ValidationError(f"Not an email address: {', '.join(bad)}.")
        return addresses

    def clean(self):
        data = super().clean()
        for name in ("start_date", "end_date", "until"):
            if data.get(name) and not FIRST_YEAR <= data[name].year <= LAST_YEAR:
                self.add_error(name, f"Choose a date between {FIRST_YEAR} and {LAST_YEAR}.")
                data.pop(name, None)
        if data.get("color") == "custom" and "custom_color" in data and not data["custom_color"]:
            self.add_error("custom_color", "Type a colour, or choose one of the swatches.")
        all_day = data.get("all_day")
        if not all_day:
            for name in ("start_time", "end_time"):
                if name in data and data[name] is None:
                    self.add_error(name, "Give a time, or tick All day.")
        start, end = self.moments(data)
        if start and end and end < start:
            self.add_error("end_date", "The end may not be before the start.")
        repeat = data.get("repeat")
        if repeat in FREQS and not self.is_occurrence_only(data):
            if data.get("ends") == "count" and not data.get("count"):
                self.add_error("count", "How many times?")
            if data.get("ends") == "until":
                if not data.get("until"):
                    self.add_error("until", "Choose the last day.")
                elif data.get("start_date") and data["until"] < data["start_date"]:
                    self.add_error("until", "The last day may not be before the first.")
        return data

    def is_occurrence_only(self, data=None) -> bool:
        data = self.cleaned_data if data is None else data
        return self.occurrence and data.get("scope", "this") != "all"

    def moments(self, data=None) -> tuple[datetime | None, datetime | None]:
        """Start and end as aware UTC datetimes (all-day: midnight UTC, end exclusive)."""
        data = self.cleaned_data if data is None else data
        start_date, end_date = data.get("start_date"), data.get("end_date")
        if not start_date or not end_date:
            return None, None
        if data.get("all_day"):
            return (datetime.combine(start_date, time(), tzinfo=UTC),
                    datetime.combine(end_date + timedelta(days=1), time(), tzinfo=UTC))
        if data.get("start_time") is None or data.get("end_time") is None:
            return None, None
        return (datetime.combine(start_date, data["start_time"], tzinfo=self.zone).astimezone(UTC),
                datetime.combine(end_date, data["end_time"], tzinfo=self.zone).astimezone(UTC))

    def color_value(self) -> str:
        choice = self.cleaned_data.get("color") or ""
        return self.cleaned_data["custom_color"] if choice == "custom" else choice

    def recurrence(self) -> Recurrence:
        data = self.cleaned_data
        return Recurrence(repeat=data["repeat"], interval=data.get("interval") or 1, weekdays=tuple(data["weekdays"]),
                          ends=data["ends"], count=data.get("count"), until=data.get("until"))


def event_initial(*, start: datetime, end: datetime, all_day: bool, zone, title="", location="", description="",
                  color="", attendees=(), rule: str = "") -> dict:
    """The form's initial values for an event (or occurrence) with these UTC times."""
    if all_day:
        start_local, end_local = start.astimezone(UTC), (end - timedelta(days=1)).astimezone(UTC)
        if end_local < start_local:
            end_local = start_local
    else:
        start_local, end_local = start.astimezone(zone), end.astimezone(zone)
    swatch = color if color in {value for value, _ in SWATCHES} else ("custom" if color else "")
    recurrence = recurrence_parse(rule, zone=zone, all_day=all_day)
    return {
        "title": title, "all_day": all_day, "start_date": start_local.date(), "end_date": end_local.date(),
        "start_time": None if all_day else start_local.time().replace(second=0, microsecond=0),
        "end_time": None if all_day else end_local.time().replace(second=0, microsecond=0),
        "location": location, "description": description, "color": swatch,
        "custom_color": color if swatch == "custom" else "", "attendees": "\n".join(attendees),
        "repeat": recurrence.repeat, "interval": recurrence.interval, "weekdays": list(recurrence.weekdays),
        "ends": recurrence.ends, "count": recurrence.count, "until": recurrence.until,
    }


def timezone_choices() -> list[tuple[str, str]]:
    names = sorted(name for name in available_timezones() if "/" in name and not name.startswith(("Etc/", "SystemV/")))
    return [("", "UTC"), *((name, name.replace("_", " ")) for name in names)]


class CalendarSettingsForm(forms.Form):
    timezone = forms.ChoiceField(label="Time zone", required=False,
                                 help_text="The pages show every time in this zone, and new events are made in it "
                                           "(a weekly meeting stays at 9:00 when the clocks change).")
    color = forms.CharField(label="Calendar colour", max_length=7,
                            help_text="Events without a colour of their own. #rrggbb.",
                            widget=forms.TextInput(attrs={"type": "color"}))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["timezone"].choices = timezone_choices()

    def clean_color(self):
        value = self.cleaned_data["color"].strip()
        if not HEX.match(value):
            raise ValidationError("A colour is # and six hex digits, for example #2563eb.")
        return value.lower()


class TimezonePresetForm(forms.Form):
    """What the page's script sends on the first visit: the browser's IANA zone."""
    timezone = forms.CharField(max_length=64)

    def clean_timezone(self):
        value = self.cleaned_data["timezone"]
        try:
            ical.zone(value)
        except ical.ICalError as exc:
            raise ValidationError(str(exc)) from exc
        return "" if value in ("UTC", "Etc/UTC") else value


class ImportForm(forms.Form):
    file = forms.FileField(label=".ics file", help_text="An iCalendar file exported from another calendar, "
                                                        "up to 5 MB. Events already here (same UID) are replaced.")

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise ValidationError("The file is over 5 MB.")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationError("The file is not UTF-8 text: is it an .ics file?") from exc


def _hex_color(value: str) -> str:
    value = value.strip()
    if not HEX.match(value):
        raise ValidationError("A colour is # and six hex digits, for example #2563eb.")
    return value.lower()


class CalendarForm(forms.Form):
    """A calendar of the mailbox: made here (with what it holds) or renamed and recoloured."""
    name = forms.CharField(label="Name", max_length=100)
    color = forms.CharField(label="Colour", max_length=7, initial="#16a34a",
                            widget=forms.TextInput(attrs={"type": "color"}))
    holds = forms.ChoiceField(label="Holds", initial="both", choices=[
        ("both", "Events and tasks"), ("events", "Events only"), ("tasks", "Tasks only")],
        help_text="Fixed once the calendar is made; phones show a calendar that holds tasks as a reminders list.")

    def __init__(self, *args, renaming: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if renaming:
            del self.fields["holds"]

    def clean_color(self):
        return _hex_color(self.cleaned_data["color"])

    def components(self) -> list[str]:
        return {"both": ["VEVENT", "VTODO"], "events": ["VEVENT"], "tasks": ["VTODO"]}[self.cleaned_data["holds"]]


class TaskForm(forms.Form):
    title = forms.CharField(label="Task", max_length=255)
    due = forms.DateField(label="Due", required=False, widget=forms.DateInput(attrs={"type": "date"}))
    calendar = forms.TypedChoiceField(label="List", coerce=int, required=False)

    def __init__(self, *args, calendars=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.calendars = {calendar.pk: calendar for calendar in calendars}
        if len(self.calendars) > 1:
            self.fields["calendar"].choices = [(pk, calendar.name) for pk, calendar in self.calendars.items()]
        else:
            del self.fields["calendar"]

    def clean_due(self):
        due = self.cleaned_data["due"]
        if due is not None and not FIRST_YEAR <= due.year <= LAST_YEAR:
            raise ValidationError(f"A date between {FIRST_YEAR} and {LAST_YEAR}.")
        return due

    def chosen_calendar(self, default):
        return self.calendars.get(self.cleaned_data.get("calendar"), default)
