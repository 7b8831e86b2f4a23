"""Contacts, calendars, imports, campaigns and the webmail's own data become apps of their own
(issue 32). Only Django's idea of where the models live changes: their tables keep their names and
their rows (each model sets db_table), so nothing is copied and Dovecot's and Postfix's lookups are
untouched. Their content types (and so permissions and admin history) follow them."""
from django.db import migrations

MOVED = {
    "contacts": ["addressbook", "contact", "contactchange", "contactgroup"],
    "calendars": ["calendar", "calendarevent", "calendareventchange"],
    "imports": ["importjob", "importitem"],
    "campaigns": ["campaign", "campaignstep", "enrollment", "stepdelivery", "suppression"],
    "webmail": ["remoteimagesender", "webmailbrand", "webmailhostname", "webmailsession"],
}


def _relabel(apps, old_of, new_of):
    content_types = apps.get_model("contenttypes", "ContentType").objects
    for app, models in MOVED.items():
        old, new = old_of(app), new_of(app)
        taken = set(content_types.filter(app_label=new, model__in=models).values_list("model", flat=True))
        content_types.filter(app_label=old, model__in=set(models) - taken).update(app_label=new)


def content_types_follow(apps, schema_editor):
    _relabel(apps, lambda app: "mailcore", lambda app: app)


def content_types_return(apps, schema_editor):
    _relabel(apps, lambda app: app, lambda app: "mailcore")


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0033_hardconn_forget_unproven_connected'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    state_operations = [
        migrations.RemoveConstraint(
            model_name='addressbook',
            name='addressbook_one_per_client',
        ),
        migrations.RemoveConstraint(
            model_name='addressbook',
            name='addressbook_slug_unique_per_mailbox',
        ),
        migrations.RemoveConstraint(
            model_name='addressbook',
            name='addressbook_slug_unique_per_account',
        ),
        migrations.RemoveConstraint(
            model_name='addressbook',
            name='addressbook_one_default_per_mailbox',
        ),
        migrations.RemoveConstraint(
            model_name='addressbook',
            name='addressbook_one_default_per_account',
        ),
        migrations.RemoveConstraint(
            model_name='calendar',
            name='calendar_slug_unique_per_mailbox',
        ),
        migrations.RemoveConstraint(
            model_name='calendar',
            name='calendar_slug_unique_per_account',
        ),
        migrations.RemoveConstraint(
            model_name='calendar',
            name='calendar_one_default_per_mailbox',
        ),
        migrations.RemoveConstraint(
            model_name='calendar',
            name='calendar_one_default_per_account',
        ),
        migrations.RemoveIndex(
            model_name='calendarevent',
            name='mailcore_ca_calenda_fc37d7_idx',
        ),
        migrations.RemoveIndex(
            model_name='calendarevent',
            name='mailcore_ca_calenda_788f79_idx',
        ),
        migrations.RemoveIndex(
            model_name='calendarevent',
            name='mailcore_ca_calenda_8cf4f8_idx',
        ),
        migrations.RemoveConstraint(
            model_name='calendarevent',
            name='event_href_unique_per_calendar',
        ),
        migrations.RemoveConstraint(
            model_name='calendarevent',
            name='event_uid_unique_per_calendar',
        ),
        migrations.RemoveIndex(
            model_name='calendareventchange',
            name='mailcore_ca_collect_a38117_idx',
        ),
        migrations.RemoveConstraint(
            model_name='calendareventchange',
            name='eventchange_one_per_href',
        ),
        migrations.RemoveIndex(
            model_name='campaign',
            name='mailcore_ca_status_9ad1bf_idx',
        ),
        migrations.RemoveConstraint(
            model_name='campaignstep',
            name='campaignstep_position_unique',
        ),
        migrations.RemoveIndex(
            model_name='contact',
            name='mailcore_co_book_id_dacd60_idx',
        ),
        migrations.RemoveIndex(
            model_name='contact',
            name='mailcore_co_book_id_df0ea1_idx',
        ),
        migrations.RemoveConstraint(
            model_name='contact',
            name='contact_href_unique_per_book',
        ),
        migrations.RemoveConstraint(
            model_name='contact',
            name='contact_uid_unique_per_book',
        ),
        migrations.RemoveIndex(
            model_name='contactchange',
            name='mailcore_co_collect_e54f1a_idx',
        ),
        migrations.RemoveConstraint(
            model_name='contactchange',
            name='contactchange_one_per_href',
        ),
        migrations.RemoveConstraint(
            model_name='contactgroup',
            name='contactgroup_name_unique_per_book',
        ),
        migrations.RemoveIndex(
            model_name='enrollment',
            name='mailcore_en_campaig_b39067_idx',
        ),
        migrations.RemoveConstraint(
            model_name='enrollment',
            name='enrollment_once_per_address',
        ),
        migrations.RemoveConstraint(
            model_name='importitem',
            name='importitem_one_per_position',
        ),
        migrations.RemoveIndex(
            model_name='importjob',
            name='mailcore_im_status_1d5533_idx',
        ),
        migrations.RemoveConstraint(
            model_name='remoteimagesender',
            name='remote_image_sender_unique',
        ),
        migrations.RemoveIndex(
            model_name='stepdelivery',
            name='mailcore_st_status_76eaa8_idx',
        ),
        migrations.RemoveIndex(
            model_name='stepdelivery',
            name='mailcore_st_step_id_1e05d7_idx',
        ),
        migrations.RemoveConstraint(
            model_name='stepdelivery',
            name='stepdelivery_once',
        ),
        migrations.RemoveIndex(
            model_name='suppression',
            name='mailcore_su_email_a720a0_idx',
        ),
        migrations.RemoveConstraint(
            model_name='suppression',
            name='suppression_once_per_account',
        ),
        migrations.RemoveConstraint(
            model_name='suppression',
            name='suppression_once_platform',
        ),
        migrations.RemoveField(
            model_name='webmailbrand',
            name='partner',
        ),
        migrations.RemoveIndex(
            model_name='webmailhostname',
            name='mailcore_we_next_ch_e99000_idx',
        ),
        migrations.RemoveIndex(
            model_name='webmailsession',
            name='mailcore_we_expires_8b4e98_idx',
        ),
        migrations.RemoveField(
            model_name='addressbook',
            name='account',
        ),
        migrations.RemoveField(
            model_name='addressbook',
            name='client',
        ),
        migrations.RemoveField(
            model_name='addressbook',
            name='mailbox',
        ),
        migrations.RemoveField(
            model_name='calendar',
            name='account',
        ),
        migrations.RemoveField(
            model_name='calendar',
            name='mailbox',
        ),
        migrations.RemoveField(
            model_name='calendarevent',
            name='calendar',
        ),
        migrations.RemoveField(
            model_name='calendareventchange',
            name='collection',
        ),
        migrations.RemoveField(
            model_name='campaign',
            name='account',
        ),
        migrations.RemoveField(
            model_name='campaign',
            name='book',
        ),
        migrations.RemoveField(
            model_name='campaign',
            name='group',
        ),
        migrations.RemoveField(
            model_name='campaign',
            name='mailbox',
        ),
        migrations.RemoveField(
            model_name='campaignstep',
            name='campaign',
        ),
        migrations.RemoveField(
            model_name='contact',
            name='book',
        ),
        migrations.RemoveField(
            model_name='contact',
            name='groups',
        ),
        migrations.RemoveField(
            model_name='contactchange',
            name='collection',
        ),
        migrations.RemoveField(
            model_name='contactgroup',
            name='book',
        ),
        migrations.RemoveField(
            model_name='enrollment',
            name='campaign',
        ),
        migrations.RemoveField(
            model_name='enrollment',
            name='contact',
        ),
        migrations.RemoveField(
            model_name='importitem',
            name='job',
        ),
        migrations.RemoveField(
            model_name='importjob',
            name='account',
        ),
        migrations.RemoveField(
            model_name='importjob',
            name='book',
        ),
        migrations.RemoveField(
            model_name='importjob',
            name='calendar',
        ),
        migrations.RemoveField(
            model_name='importjob',
            name='mailbox',
        ),
        migrations.RemoveField(
            model_name='remoteimagesender',
            name='mailbox',
        ),
        migrations.RemoveField(
            model_name='stepdelivery',
            name='enrollment',
        ),
        migrations.RemoveField(
            model_name='stepdelivery',
            name='outbound',
        ),
        migrations.RemoveField(
            model_name='stepdelivery',
            name='step',
        ),
        migrations.RemoveField(
            model_name='suppression',
            name='account',
        ),
        migrations.RemoveField(
            model_name='suppression',
            name='campaign',
        ),
        migrations.DeleteModel(
            name='WebmailBrand',
        ),
        migrations.RemoveField(
            model_name='webmailhostname',
            name='partner',
        ),
        migrations.RemoveField(
            model_name='webmailsession',
            name='mailbox',
        ),
        migrations.DeleteModel(
            name='CalendarEvent',
        ),
        migrations.DeleteModel(
            name='CalendarEventChange',
        ),
        migrations.DeleteModel(
            name='ContactChange',
        ),
        migrations.DeleteModel(
            name='ContactGroup',
        ),
        migrations.DeleteModel(
            name='Contact',
        ),
        migrations.DeleteModel(
            name='ImportItem',
        ),
        migrations.DeleteModel(
            name='AddressBook',
        ),
        migrations.DeleteModel(
            name='Calendar',
        ),
        migrations.DeleteModel(
            name='ImportJob',
        ),
        migrations.DeleteModel(
            name='RemoteImageSender',
        ),
        migrations.DeleteModel(
            name='Enrollment',
        ),
        migrations.DeleteModel(
            name='CampaignStep',
        ),
        migrations.DeleteModel(
            name='StepDelivery',
        ),
        migrations.DeleteModel(
            name='Campaign',
        ),
        migrations.DeleteModel(
            name='Suppression',
        ),
        migrations.DeleteModel(
            name='WebmailHostname',
        ),
        migrations.DeleteModel(
            name='WebmailSession',
        ),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=state_operations),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
