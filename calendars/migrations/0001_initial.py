"""The calendars app's models as they were in mailcore (migration 0034 there): state only, the
tables exist already under their mailcore_ names."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('mailcore', '0034_features_to_own_apps'),
    ]

    state_operations = [
        migrations.CreateModel(
            name='Calendar',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.BigIntegerField(default=0, help_text='Bumped by every change of a resource in it.')),
                ('slug', models.CharField(help_text="The collection's name in its DAV path (its URL segment).", max_length=100)),
                ('is_default', models.BooleanField(default=False, help_text='The one a mailbox (or account) gets on first use; it keeps the original URL and cannot be deleted.')),
                ('properties', models.JSONField(blank=True, default=dict, help_text='Dead properties sync clients set (Clark name -> XML), bounded.')),
                ('name', models.CharField(default='Calendar', max_length=100)),
                ('color', models.CharField(default='#2563eb', max_length=7)),
                ('timezone', models.CharField(blank=True, help_text='IANA zone the owner sees the calendar in (webmail, new events); empty: UTC.', max_length=64)),
                ('feed_token_digest', models.CharField(blank=True, help_text="SHA-256 of the read-only .ics feed's token; empty: no feed.", max_length=64, null=True, unique=True)),
                ('components', models.CharField(default='VEVENT,VTODO', help_text='What it holds (comma-separated VEVENT, VTODO); fixed when it is made.', max_length=40)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='calendars', to='mailcore.account')),
                ('mailbox', models.ForeignKey(blank=True, help_text="Empty: the account's own calendar.", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='calendars', to='mailcore.mailbox')),
            ],
            options={
                'db_table': 'mailcore_calendar',
                'ordering': ['-is_default', 'name', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='CalendarEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('component', models.CharField(choices=[('VEVENT', 'Event'), ('VTODO', 'Task')], default='VEVENT', max_length=10)),
                ('uid', models.CharField(help_text='The iCalendar UID, stable across invitations.', max_length=255)),
                ('href', models.CharField(help_text='The resource name in the CalDAV collection.', max_length=255)),
                ('title', models.CharField(max_length=255)),
                ('description', models.TextField(blank=True)),
                ('location', models.CharField(blank=True, max_length=255)),
                ('color', models.CharField(blank=True, max_length=7)),
                ('start', models.DateTimeField(blank=True, help_text='Empty only for a task without DTSTART.', null=True)),
                ('end', models.DateTimeField(blank=True, help_text='Empty only for a task.', null=True)),
                ('all_day', models.BooleanField(default=False, help_text='Dates, not times (for a task: its due date).')),
                ('due', models.DateTimeField(blank=True, help_text="A task's DUE; empty: no due date.", null=True)),
                ('completed_at', models.DateTimeField(blank=True, help_text="A task's COMPLETED; empty: not done.", null=True)),
                ('priority', models.PositiveSmallIntegerField(default=0, help_text="A task's PRIORITY: 1 highest, 9 lowest, 0 none.")),
                ('status', models.CharField(blank=True, help_text='The STATUS value (a task: NEEDS-ACTION, IN-PROCESS, COMPLETED, CANCELLED).', max_length=20)),
                ('timezone', models.CharField(blank=True, help_text='IANA zone of the times; empty: UTC.', max_length=64)),
                ('recurrence', models.CharField(blank=True, help_text='The RRULE value; empty: one occurrence.', max_length=255)),
                ('range_end', models.DateTimeField(blank=True, help_text='End of the last occurrence; empty: the series never ends.', null=True)),
                ('is_series', models.BooleanField(default=False, help_text='RRULE, RDATE or overridden occurrences: only these are expanded to answer a time range; [start, range_end) decides for the rest.')),
                ('organizer', models.CharField(blank=True, max_length=320)),
                ('attendees', models.JSONField(blank=True, default=list, help_text='[{"email", "name", "status"}]')),
                ('sequence', models.PositiveIntegerField(default=0)),
                ('ical', models.TextField()),
                ('etag', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('calendar', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='calendars.calendar')),
            ],
            options={
                'db_table': 'mailcore_calendarevent',
            },
        ),
        migrations.CreateModel(
            name='CalendarEventChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('href', models.CharField(max_length=255)),
                ('revision', models.BigIntegerField()),
                ('deleted', models.BooleanField(default=False)),
                ('collection', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='changes', to='calendars.calendar')),
            ],
            options={
                'db_table': 'mailcore_calendareventchange',
            },
        ),
        migrations.AddConstraint(
            model_name='calendar',
            constraint=models.UniqueConstraint(condition=models.Q(('mailbox__isnull', False)), fields=('mailbox', 'slug'), name='calendar_slug_unique_per_mailbox'),
        ),
        migrations.AddConstraint(
            model_name='calendar',
            constraint=models.UniqueConstraint(condition=models.Q(('mailbox__isnull', True)), fields=('account', 'slug'), name='calendar_slug_unique_per_account'),
        ),
        migrations.AddConstraint(
            model_name='calendar',
            constraint=models.UniqueConstraint(condition=models.Q(('is_default', True), ('mailbox__isnull', False)), fields=('mailbox',), name='calendar_one_default_per_mailbox'),
        ),
        migrations.AddConstraint(
            model_name='calendar',
            constraint=models.UniqueConstraint(condition=models.Q(('is_default', True), ('mailbox__isnull', True)), fields=('account',), name='calendar_one_default_per_account'),
        ),
        migrations.AddIndex(
            model_name='calendarevent',
            index=models.Index(fields=['calendar', 'start'], name='mailcore_ca_calenda_fc37d7_idx'),
        ),
        migrations.AddIndex(
            model_name='calendarevent',
            index=models.Index(fields=['calendar', 'range_end'], name='mailcore_ca_calenda_788f79_idx'),
        ),
        migrations.AddIndex(
            model_name='calendarevent',
            index=models.Index(fields=['calendar', 'component', 'due'], name='mailcore_ca_calenda_8cf4f8_idx'),
        ),
        migrations.AddConstraint(
            model_name='calendarevent',
            constraint=models.UniqueConstraint(fields=('calendar', 'href'), name='event_href_unique_per_calendar'),
        ),
        migrations.AddConstraint(
            model_name='calendarevent',
            constraint=models.UniqueConstraint(fields=('calendar', 'uid'), name='event_uid_unique_per_calendar'),
        ),
        migrations.AddIndex(
            model_name='calendareventchange',
            index=models.Index(fields=['collection', 'revision'], name='mailcore_ca_collect_a38117_idx'),
        ),
        migrations.AddConstraint(
            model_name='calendareventchange',
            constraint=models.UniqueConstraint(fields=('collection', 'href'), name='eventchange_one_per_href'),
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
