"""CalendarEvent.is_series, filled for the events already stored: a time-range query expands only series."""
from django.db import migrations, models


def fill_is_series(apps, schema_editor):
    from mailcore.calendars import ical

    CalendarEvent = apps.get_model("mailcore", "CalendarEvent")
    series = []
    for pk, text in CalendarEvent.objects.values_list("pk", "ical").iterator(chunk_size=500):
        try:
            if ical.is_series(ical.parse(text)):
                series.append(pk)
        except ical.ICalError:
            series.append(pk)  # unreadable: looked at occurrence by occurrence, as before
    for first in range(0, len(series), 500):
        CalendarEvent.objects.filter(pk__in=series[first:first + 500]).update(is_series=True)


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0027_davcoll_collections")]

    operations = [
        migrations.AddField(
            model_name="calendarevent", name="is_series",
            field=models.BooleanField(default=False, help_text=(
                "RRULE, RDATE or overridden occurrences: only these are expanded to answer a time range; "
                "[start, range_end) decides for the rest.")),
        ),
        migrations.RunPython(fill_is_series, migrations.RunPython.noop),
    ]
