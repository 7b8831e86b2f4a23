"""Indexes for a partner's reads at 10,000 mailboxes: the mailbox list's page (newest first) and the
dashboard's terms ending soon, each read from the index instead of sorting every mailbox."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0019_campaigns'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='partnermailbox',
            index=models.Index(fields=['partner', '-created_at', '-id'], name='partnermailbox_newest_idx'),
        ),
        migrations.AddIndex(
            model_name='partnermailbox',
            index=models.Index(fields=['partner', 'expires_at'], name='partnermailbox_ending_idx'),
        ),
    ]
