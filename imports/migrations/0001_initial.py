"""The imports app's models as they were in mailcore (migration 0034 there): state only, the
tables exist already under their mailcore_ names."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('calendars', '0001_initial'),
        ('contacts', '0001_initial'),
        ('mailcore', '0034_features_to_own_apps'),
    ]

    state_operations = [
        migrations.CreateModel(
            name='ImportJob',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('events', 'Calendar events (.ics)'), ('contacts', 'Contacts (.vcf)'), ('contacts_csv', 'Contacts (.csv)')], max_length=16)),
                ('filename', models.CharField(blank=True, max_length=255)),
                ('status', models.CharField(choices=[('queued', 'Waiting or importing'), ('done', 'Done')], default='queued', max_length=16)),
                ('total', models.PositiveIntegerField(help_text='Items in the file.')),
                ('position', models.PositiveIntegerField(default=0, help_text="Items applied (or refused) so far: the next item's position.")),
                ('created', models.PositiveIntegerField(default=0)),
                ('updated', models.PositiveIntegerField(default=0)),
                ('failed', models.PositiveIntegerField(default=0)),
                ('errors', models.JSONField(blank=True, default=list, help_text='What went wrong with which item (the first few hundred).')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='mailcore.account')),
                ('book', models.ForeignKey(blank=True, help_text='Where contacts go (kind contacts).', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='contacts.addressbook')),
                ('calendar', models.ForeignKey(blank=True, help_text='Where events go (kind events).', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='calendars.calendar')),
                ('mailbox', models.ForeignKey(blank=True, help_text='The mailbox whose owner started it.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='import_jobs', to='mailcore.mailbox')),
            ],
            options={
                'verbose_name': 'import job',
                'db_table': 'mailcore_importjob',
            },
        ),
        migrations.CreateModel(
            name='ImportItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField()),
                ('uid', models.TextField(blank=True, help_text="The UID of a calendar object; a CSV row's number (a vCard carries its own UID in the text).")),
                ('text', models.TextField(help_text='One calendar object or one vCard, as cut out of the file; a CSV row as planned (JSON).')),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='imports.importjob')),
            ],
            options={
                'db_table': 'mailcore_importitem',
            },
        ),
        migrations.AddIndex(
            model_name='importjob',
            index=models.Index(fields=['status', 'created_at'], name='mailcore_im_status_1d5533_idx'),
        ),
        migrations.AddConstraint(
            model_name='importitem',
            constraint=models.UniqueConstraint(fields=('job', 'position'), name='importitem_one_per_position'),
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
