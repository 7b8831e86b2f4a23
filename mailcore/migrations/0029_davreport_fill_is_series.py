"""CalendarEvent.is_series for the events already stored. Not atomic: each batch of BATCH events
commits on its own, so no lock is held on calendarevent while every stored event is parsed, and a
run stopped half-way is simply run again (the fill only ever marks series)."""
import icalendar
from django.db import migrations, transaction

BATCH = 500


def _is_series(text: str) -> bool:
    """More than one occurrence to look at: RRULE, RDATE or overrides (RECURRENCE-ID). Frozen here
    rather than imported from the calendars app, whose code may change after this migration; an
    unreadable resource counts as a series (it is looked at occurrence by occurrence, as before)."""
    try:
        events = icalendar.Calendar.from_ical(text).walk("VEVENT")
    except ValueError:
        return True
    if not events or any("DTSTART" not in event for event in events):
        return True
    return any(name in event for event in events for name in ("RRULE", "RDATE", "RECURRENCE-ID"))


def fill_is_series(apps, schema_editor):
    CalendarEvent = apps.get_model("mailcore", "CalendarEvent")
    last = 0
    while True:
        rows = list(CalendarEvent.objects.filter(pk__gt=last, is_series=False).order_by("pk")
                    .values_list("pk", "ical")[:BATCH])
        if not rows:
            return
        series = [pk for pk, text in rows if _is_series(text)]
        with transaction.atomic():
            CalendarEvent.objects.filter(pk__in=series).update(is_series=True)
        last = rows[-1][0]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("mailcore", "0028_davreport_event_is_series")]

    operations = [
        migrations.RunPython(fill_is_series, migrations.RunPython.noop, elidable=True),
    ]
