"""The webmail app's models as they were in mailcore (migration 0034 there): state only, the
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
            name='WebmailBrand',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('brand_name', models.CharField(blank=True, max_length=80)),
                ('logo', models.BinaryField(blank=True, help_text='Re-encoded by Pillow (PNG or WebP).', null=True)),
                ('logo_content_type', models.CharField(blank=True, max_length=32)),
                ('logo_source_url', models.URLField(blank=True, help_text='Fetched once, when saved.', max_length=2048)),
                ('primary_color', models.CharField(blank=True, max_length=7)),
                ('primary_gradient_to', models.CharField(blank=True, help_text='Set: a gradient from primary_color.', max_length=7)),
                ('primary_gradient_angle', models.PositiveSmallIntegerField(default=90)),
                ('secondary_color', models.CharField(blank=True, max_length=7)),
                ('secondary_gradient_to', models.CharField(blank=True, max_length=7)),
                ('secondary_gradient_angle', models.PositiveSmallIntegerField(default=90)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('partner', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='webmail_brand', to='mailcore.hostingpartner')),
            ],
            options={
                'db_table': 'mailcore_webmailbrand',
            },
        ),
        migrations.CreateModel(
            name='RemoteImageSender',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sender', models.CharField(help_text='Lowercase address.', max_length=320)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('mailbox', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='remote_image_senders', to='mailcore.mailbox')),
            ],
            options={
                'db_table': 'mailcore_remoteimagesender',
                'constraints': [models.UniqueConstraint(fields=('mailbox', 'sender'), name='remote_image_sender_unique')],
            },
        ),
        migrations.CreateModel(
            name='WebmailHostname',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('hostname', models.CharField(help_text='Lowercase, ASCII (IDNA), no trailing dot.', max_length=253, unique=True)),
                ('verified_at', models.DateTimeField(blank=True, null=True)),
                ('last_checked_at', models.DateTimeField(blank=True, null=True)),
                ('next_check_at', models.DateTimeField(blank=True, null=True)),
                ('check_problem', models.CharField(blank=True, help_text='Why it is not verified yet, in words.', max_length=300)),
                ('pending_since', models.DateTimeField(blank=True, help_text='Unverified since (claimed, or lost its DNS); checks stop a week on.', null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('partner', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='webmail_hostname', to='mailcore.hostingpartner')),
            ],
            options={
                'db_table': 'mailcore_webmailhostname',
                'indexes': [models.Index(fields=['next_check_at'], name='mailcore_we_next_ch_e99000_idx')],
            },
        ),
        migrations.CreateModel(
            name='WebmailSession',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token_prefix', models.CharField(max_length=32, unique=True)),
                ('token_digest', models.CharField(max_length=64)),
                ('remember', models.BooleanField(default=False, help_text='Kept for 30 days instead of the browser session.')),
                ('client_ip', models.GenericIPAddressField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField()),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('credential_stamp', models.CharField(blank=True, help_text='A keyed digest of the mailbox password hash it was opened with; a new password ends it.', max_length=64)),
                ('mailbox', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webmail_sessions', to='mailcore.mailbox')),
            ],
            options={
                'db_table': 'mailcore_webmailsession',
                'indexes': [models.Index(fields=['expires_at'], name='mailcore_we_expires_8b4e98_idx')],
            },
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
