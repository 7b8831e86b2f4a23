"""The contacts app's models as they were in mailcore (migration 0034 there): state only, the
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
            name='AddressBook',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('revision', models.BigIntegerField(default=0, help_text='Bumped by every change of a resource in it.')),
                ('slug', models.CharField(help_text="The collection's name in its DAV path (its URL segment).", max_length=100)),
                ('is_default', models.BooleanField(default=False, help_text='The one a mailbox (or account) gets on first use; it keeps the original URL and cannot be deleted.')),
                ('properties', models.JSONField(blank=True, default=dict, help_text='Dead properties sync clients set (Clark name -> XML), bounded.')),
                ('name', models.CharField(default='Contacts', max_length=100)),
                ('color', models.CharField(default='#2563eb', help_text='#rrggbb: how the webmail marks its contacts.', max_length=7)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('account', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='address_books', to='mailcore.account')),
                ('client', models.ForeignKey(blank=True, help_text="A hosting partner's client: its own book (the partner API's contacts).", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='address_books', to='mailcore.partnerclient')),
                ('mailbox', models.ForeignKey(blank=True, help_text="Empty: the account's own book.", null=True, on_delete=django.db.models.deletion.CASCADE, related_name='address_books', to='mailcore.mailbox')),
            ],
            options={
                'db_table': 'mailcore_addressbook',
                'ordering': ['-is_default', 'name', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='ContactChange',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('href', models.CharField(max_length=255)),
                ('revision', models.BigIntegerField()),
                ('deleted', models.BooleanField(default=False)),
                ('collection', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='changes', to='contacts.addressbook')),
            ],
            options={
                'db_table': 'mailcore_contactchange',
            },
        ),
        migrations.CreateModel(
            name='ContactGroup',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('book', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='groups', to='contacts.addressbook')),
            ],
            options={
                'db_table': 'mailcore_contactgroup',
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='Contact',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uid', models.CharField(help_text='The vCard UID.', max_length=255)),
                ('href', models.CharField(help_text='The resource name in the CardDAV collection.', max_length=255)),
                ('name', models.CharField(max_length=255)),
                ('email', models.CharField(blank=True, max_length=320)),
                ('phone', models.CharField(blank=True, max_length=64)),
                ('company', models.CharField(blank=True, max_length=255)),
                ('notes', models.TextField(blank=True)),
                ('vcard', models.TextField()),
                ('etag', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('book', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='contacts', to='contacts.addressbook')),
                ('groups', models.ManyToManyField(blank=True, db_table='mailcore_contact_groups', related_name='contacts', to='contacts.contactgroup')),
            ],
            options={
                'db_table': 'mailcore_contact',
            },
        ),
        migrations.AddConstraint(
            model_name='addressbook',
            constraint=models.UniqueConstraint(condition=models.Q(('mailbox__isnull', False)), fields=('mailbox', 'slug'), name='addressbook_slug_unique_per_mailbox'),
        ),
        migrations.AddConstraint(
            model_name='addressbook',
            constraint=models.UniqueConstraint(condition=models.Q(('client__isnull', True), ('mailbox__isnull', True)), fields=('account', 'slug'), name='addressbook_slug_unique_per_account'),
        ),
        migrations.AddConstraint(
            model_name='addressbook',
            constraint=models.UniqueConstraint(condition=models.Q(('is_default', True), ('mailbox__isnull', False)), fields=('mailbox',), name='addressbook_one_default_per_mailbox'),
        ),
        migrations.AddConstraint(
            model_name='addressbook',
            constraint=models.UniqueConstraint(condition=models.Q(('client__isnull', True), ('is_default', True), ('mailbox__isnull', True)), fields=('account',), name='addressbook_one_default_per_account'),
        ),
        migrations.AddConstraint(
            model_name='addressbook',
            constraint=models.UniqueConstraint(condition=models.Q(('client__isnull', False)), fields=('client',), name='addressbook_one_per_client'),
        ),
        migrations.AddIndex(
            model_name='contactchange',
            index=models.Index(fields=['collection', 'revision'], name='mailcore_co_collect_e54f1a_idx'),
        ),
        migrations.AddConstraint(
            model_name='contactchange',
            constraint=models.UniqueConstraint(fields=('collection', 'href'), name='contactchange_one_per_href'),
        ),
        migrations.AddConstraint(
            model_name='contactgroup',
            constraint=models.UniqueConstraint(fields=('book', 'name'), name='contactgroup_name_unique_per_book'),
        ),
        migrations.AddIndex(
            model_name='contact',
            index=models.Index(fields=['book', 'name'], name='mailcore_co_book_id_dacd60_idx'),
        ),
        migrations.AddIndex(
            model_name='contact',
            index=models.Index(fields=['book', 'email'], name='mailcore_co_book_id_df0ea1_idx'),
        ),
        migrations.AddConstraint(
            model_name='contact',
            constraint=models.UniqueConstraint(fields=('book', 'href'), name='contact_href_unique_per_book'),
        ),
        migrations.AddConstraint(
            model_name='contact',
            constraint=models.UniqueConstraint(fields=('book', 'uid'), name='contact_uid_unique_per_book'),
        ),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=state_operations)]
