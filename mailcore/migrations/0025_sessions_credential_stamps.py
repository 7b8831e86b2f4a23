"""Sessions remember the credential that opened them (issue 31): a changed password ends them.
Live sessions are stamped with today's credential, so nobody is signed out by the upgrade."""
from django.contrib.auth import get_user_model
from django.db import migrations, models
from django.utils import timezone

from mailcore.mailboxes.passwords import mailbox_credential_stamp


def stamp_live_sessions(apps, schema_editor):
    now = timezone.now()
    user_model = get_user_model()  # only unsaved instances: Django's own session hash of a password
    for token in apps.get_model("mailcore", "SessionToken").objects.filter(
            revoked_at__isnull=True, expires_at__gt=now).select_related("user"):
        token.credential_stamp = user_model(password=token.user.password).get_session_auth_hash()
        token.save(update_fields=["credential_stamp"])
    for session in apps.get_model("mailcore", "WebmailSession").objects.filter(
            ended_at__isnull=True, expires_at__gt=now).select_related("mailbox"):
        session.credential_stamp = mailbox_credential_stamp(session.mailbox.password_hash)
        session.save(update_fields=["credential_stamp"])


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0024_connected_ownership'),
    ]

    operations = [
        migrations.AddField(
            model_name='sessiontoken',
            name='credential_stamp',
            field=models.CharField(blank=True, max_length=64, help_text=(
                "The user's session hash (Django's, of the password) when issued; a new password ends it.")),
        ),
        migrations.AddField(
            model_name='webmailsession',
            name='credential_stamp',
            field=models.CharField(blank=True, max_length=64, help_text=(
                "A keyed digest of the mailbox password hash it was opened with; a new password ends it.")),
        ),
        migrations.RunPython(stamp_live_sessions, migrations.RunPython.noop),
    ]
