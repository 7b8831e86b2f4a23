# Outbound screening: sends held for review, and the plan setting that exempts integrators' API sends.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0034_features_to_own_apps'),
    ]

    operations = [
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
    ]
