"""CalendarEvent.is_series for the events already stored. Not atomic: each batch of BATCH events
commits on its own, so no lock is held on calendarevent while every stored event is parsed, and a
run stopped half-way is simply run again (the fill only ever marks series)."""
from django.db import migrations, transaction

BATCH = 500


def fill_is_series(apps, schema_editor):
    from mailcore.calendars import ical

    CalendarEvent = apps.get_model("mailcore", "CalendarEvent")
    last = 0
    while True:
        rows = list(CalendarEvent.objects.filter(pk__gt=last, is_series=False).order_by("pk")
                    .values_list("pk", "ical")[:BATCH])
        if not rows:
            return
        series = []
        for pk, text in rows:
            try:
                if ical.is_series(ical.parse(text)):
                    series.append(pk)
            except ical.ICalError:
                series.append(pk)  # unreadable: looked at occurrence by occurrence, as before
        with transaction.atomic():
            CalendarEvent.objects.filter(pk__in=series).update(is_series=True)
        last = rows[-1][0]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("mailcore", "0028_davreport_event_is_series")]

    operations = [
        migrations.RunPython(fill_is_series, migrations.RunPython.noop, elidable=True),
    ]
