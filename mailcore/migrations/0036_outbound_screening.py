# Outbound screening: sends held for review, and the plan setting that exempts integrators' API sends.

import importlib

from django.db import migrations, models

# SQLite rebuilds the plan table to add a column, which Dovecot's views over it would block: they
# go for the change and come back unchanged (as in 0024).
USERS_VIEW = importlib.import_module("mailcore.migrations.0004_dovecot_users_view").CREATE
SIEVE_VIEW = importlib.import_module("mailcore.migrations.0014_webmail_filters").CREATE_VIEW
DROP_VIEWS = ["DROP VIEW dovecot_users", "DROP VIEW dovecot_sieve_scripts"]


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0034_features_to_own_apps'),
    ]

    operations = [
        migrations.RunSQL(DROP_VIEWS, [USERS_VIEW, SIEVE_VIEW]),
        migrations.AddField(
            model_name='plan',
            name='score_api_sends',
            field=models.BooleanField(default=True, help_text="Score mail sent through the API (REST, MCP, campaigns) for spam before it leaves, as owners' mail always is; off exempts an integrator plan's sends (docs/protection.md)."),
        ),
        migrations.AlterField(
            model_name='outboundmessage',
            name='status',
            field=models.CharField(choices=[('scheduled', 'Scheduled'), ('queued', 'Queued'), ('sending', 'Sending'), ('sent', 'Sent'), ('failed', 'Failed'), ('cancelled', 'Cancelled'), ('held', 'Held for review')], max_length=16),
        ),
        migrations.RunSQL([USERS_VIEW, SIEVE_VIEW], DROP_VIEWS),
    ]
