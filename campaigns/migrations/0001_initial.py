"""The campaigns app's models as they were in mailcore (migration 0034 there): state only, the
tables exist already under their mailcore_ names."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contacts', '0001_initial'),
        ('mailcore', '0034_features_to_own_apps'),
    ]

    state_operations = [
        migrations.CreateModel(
            name='Campaign',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=200)),
                ('from_email', models.CharField(max_length=320)),
                ('segment_filter', models.JSONField(blank=True, default=list)),
                ('postal_address', models.TextField(blank=True, help_text="The sender's postal address, shown in every footer (required by anti-spam laws before sending).")),
                ('status', models.CharField(choices=[('draft', 'Draft'), ('sending', 'Sending'), ('paused', 'Paused'), ('completed', 'Completed'), ('cancelled', 'Cancelled')], default='draft', max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('paused_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='campaigns', to='mailcore.account')),
                ('book', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='campaigns', to='contacts.addressbook')),
                ('group', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='campaigns', to='contacts.contactgroup')),
                ('mailbox', models.ForeignKey(help_text='The sending mailbox; from_email is one of its addresses.', on_delete=django.db.models.deletion.CASCADE, related_name='campaigns', to='mailcore.mailbox')),
            ],
            options={
                'db_table': 'mailcore_campaign',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='CampaignStep',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.PositiveIntegerField(help_text='1 for the first step, in sending order.')),
                ('delay_hours', models.PositiveIntegerField(default=0, help_text='Hours after the previous step (or enrolment).')),
                ('subject', models.CharField(max_length=998)),
                ('subject_b', models.CharField(blank=True, help_text="The A/B variant's subject; empty: no test.", max_length=998)),
                ('ab_split_percent', models.PositiveSmallIntegerField(default=50, help_text='Percent of contacts that get subject A.')),
                ('body_html', models.TextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='steps', to='campaigns.campaign')),
            ],
            options={
                'db_table': 'mailcore_campaignstep',
                'ordering': ['position', 'id'],
            },
        ),
        migrations.CreateModel(
            name='Enrollment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('email', models.CharField(help_text='The address at enrolment (the contact may change later).', max_length=320)),
                ('name', models.CharField(blank=True, max_length=255)),
                ('status', models.CharField(choices=[('active', 'Active'), ('completed', 'Completed'), ('stopped', 'Stopped')], default='active', max_length=16)),
                ('stop_reason', models.CharField(blank=True, max_length=32)),
                ('enrolled_at', models.DateTimeField()),
                ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='enrollments', to='campaigns.campaign')),
                ('contact', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='enrollments', to='contacts.contact')),
            ],
            options={
                'db_table': 'mailcore_enrollment',
            },
        ),
        migrations.CreateModel(
            name='StepDelivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('sent', 'Sent'), ('skipped', 'Skipped'), ('failed', 'Failed')], default='pending', max_length=16)),
                ('due_at', models.DateTimeField()),
                ('variant', models.CharField(blank=True, help_text='a or b: the subject this contact got.', max_length=1)),
                ('last_error', models.TextField(blank=True)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('bounced_at', models.DateTimeField(blank=True, null=True)),
                ('opened_at', models.DateTimeField(blank=True, null=True)),
                ('clicked_at', models.DateTimeField(blank=True, null=True)),
                ('unsubscribed_at', models.DateTimeField(blank=True, null=True)),
                ('complained_at', models.DateTimeField(blank=True, null=True)),
                ('enrollment', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='campaigns.enrollment')),
                ('outbound', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='campaign_delivery', to='mailcore.outboundmessage')),
                ('step', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='campaigns.campaignstep')),
            ],
            options={
                'db_table': 'mailcore_stepdelivery',
            },
        ),
        migrations.CreateModel(
            name='Suppression',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('email', models.CharField(max_length=320)),
                ('reason', models.CharField(choices=[('unsubscribed', 'Unsubscribed'), ('hard_bounce', 'Hard bounce'), ('soft_bounces', 'Repeated soft bounces'), ('complaint', 'Spam complaint'), ('manual', 'Added by hand')], max_length=16)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('account', models.ForeignKey(blank=True, help_text='Empty: platform-wide.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='suppressions', to='mailcore.account')),
                ('campaign', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='campaigns.campaign')),
            ],
            options={
                'db_table': 'mailcore_suppression',
            },
        ),
        migrations.AddIndex(
            model_name='campaign',
            index=models.Index(fields=['status'], name='mailcore_ca_status_9ad1bf_idx'),
        ),
        migrations.AddConstraint(
            model_name='campaignstep',
            constraint=models.UniqueConstraint(fields=('campaign', 'position'), name='campaignstep_position_unique'),
        ),
        migrations.AddIndex(
            model_name='enrollment',
            index=models.Index(fields=['campaign', 'status'], name='mailcore_en_campaig_b39067_idx'),
        ),
        migrations.AddConstraint(
            model_name='enrollment',
            constraint=models.UniqueConstraint(fields=('campaign', 'email'), name='enrollment_once_per_address'),
        ),
        migrations.AddIndex(
            model_name='stepdelivery',
            index=models.Index(fields=['status', 'due_at'], name='mailcore_st_status_76eaa8_idx'),
        ),
        migrations.AddIndex(
            model_name='stepdelivery',
            index=models.Index(fields=['step', 'status'], name='mailcore_st_step_id_1e05d7_idx'),
        ),
        migrations.AddConstraint(
            model_name='stepdelivery',
            constraint=models.UniqueConstraint(fields=('enrollment', 'step'), name='stepdelivery_once'),
        ),
        migrations.AddIndex(
            model_name='suppression',
            index=models.Index(fields=['email'], name='mailcore_su_email_a720a0_idx'),
        ),
        migrations.AddConstraint(
            model_name='suppression',
            constraint=models.UniqueConstraint(fields=('account', 'email'), name='suppression_once_per_account'),
        ),
        migrations.AddConstraint(
            model_name='suppression',
            constraint=models.UniqueConstraint(condition=models.Q(('account__isnull', True)), fields=('email',), name='suppression_once_platform'),
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
