"""Migration 0034 and the new apps' 0001: contacts, calendars, imports, campaigns and the webmail's
data move out of mailcore without touching a row. A database populated before the move (rows
written through mailcore's models as they were) is read and changed through the new apps after it,
and the content types (so permissions and admin history) follow their models."""
import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from testkit.factories import AccountFactory, make_mailbox

BEFORE = [("mailcore", "0033_hardconn_forget_unproven_connected")]
VCARD = "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:c-1\r\nFN:Amy Baker\r\nEMAIL:amy@bakery.test\r\nEND:VCARD\r\n"


def _populate_before_the_move(account, mailbox) -> dict[str, int]:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    model = lambda name: old.get_model("mailcore", name)  # noqa: E731
    book = model("AddressBook").objects.create(account_id=account.pk, mailbox_id=mailbox.pk, name="Contacts")
    group = model("ContactGroup").objects.create(book=book, name="Suppliers")
    contact = model("Contact").objects.create(book=book, uid="c-1", href="c-1.vcf", name="Amy Baker",
                                              email="amy@bakery.test", vcard=VCARD, etag="e")
    contact.groups.add(group)
    calendar = model("Calendar").objects.create(account_id=account.pk, mailbox_id=mailbox.pk, name="Calendar")
    event = model("CalendarEvent").objects.create(
        calendar=calendar, uid="e-1", href="e-1.ics", title="Board", start="2031-03-05T10:00:00Z",
        end="2031-03-05T11:00:00Z", ical="BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", etag="x")
    campaign = model("Campaign").objects.create(account_id=account.pk, mailbox_id=mailbox.pk, book=book,
                                                group=group, name="Spring", from_email=mailbox.address)
    model("Suppression").objects.create(account_id=account.pk, email="gone@bakery.test", reason="manual",
                                        campaign=campaign)
    job = model("ImportJob").objects.create(account_id=account.pk, mailbox_id=mailbox.pk, kind="events",
                                            calendar=calendar, total=3)
    session = model("WebmailSession").objects.create(mailbox_id=mailbox.pk, token_prefix="p", token_digest="d",
                                                     expires_at=timezone.now())
    return {"contact": contact.pk, "group": group.pk, "event": event.pk, "campaign": campaign.pk, "job": job.pk,
            "session": session.pk}


@pytest.mark.django_db(transaction=True)
def test_rows_written_before_the_move_are_read_and_changed_through_the_new_apps(plans):
    Contact, CalendarEvent, Campaign, Suppression, ImportJob, WebmailSession = (  # the apps above the kernel
        apps.get_model(label) for label in ("contacts.Contact", "calendars.CalendarEvent", "campaigns.Campaign",
                                            "campaigns.Suppression", "imports.ImportJob", "webmail.WebmailSession"))
    account = AccountFactory(plan_code="pro")
    mailbox = make_mailbox(account, "owner@bakery.test")
    contact_type = ContentType.objects.get_for_model(Contact).pk
    rows = _populate_before_the_move(account, mailbox)
    assert ContentType.objects.get(pk=contact_type).app_label == "mailcore"

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    contact = Contact.objects.get(pk=rows["contact"])
    assert [group.pk for group in contact.groups.all()] == [rows["group"]]
    assert CalendarEvent.objects.get(pk=rows["event"]).calendar.mailbox_id == mailbox.pk
    campaign = Campaign.objects.get(pk=rows["campaign"])
    assert (campaign.book_id, campaign.group_id) == (contact.book_id, rows["group"])
    assert Suppression.objects.get(email="gone@bakery.test").campaign_id == campaign.pk
    assert ImportJob.objects.get(pk=rows["job"]).calendar_id is not None
    assert WebmailSession.objects.get(pk=rows["session"]).mailbox_id == mailbox.pk
    assert (ContentType.objects.get(pk=contact_type).app_label, ContentType.objects.get_for_model(Contact).pk) == (
        "contacts", contact_type)
    assert not ContentType.objects.filter(app_label="mailcore", model="contact").exists()

    contact.name = "Amy B."
    contact.save()
    assert Contact.objects.get(pk=contact.pk).name == "Amy B."
    mailbox.delete()  # deletion reaches the moved tables through the relations the new apps declare
    assert not Contact.objects.filter(book__mailbox_id=mailbox.pk).exists()
    assert not WebmailSession.objects.filter(pk=rows["session"]).exists()
