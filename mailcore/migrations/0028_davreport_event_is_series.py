"""CalendarEvent.is_series (a time-range query expands only series); 0029 fills it for the events
already stored, in batches outside this migration's transaction."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0027_davcoll_collections")]

    operations = [
        migrations.AddField(
            model_name="calendarevent", name="is_series",
            field=models.BooleanField(default=False, help_text=(
                "RRULE, RDATE or overridden occurrences: only these are expanded to answer a time range; "
                "[start, range_end) decides for the rest.")),
        ),
    ]
