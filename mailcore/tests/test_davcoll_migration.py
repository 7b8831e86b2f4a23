"""Migration 0027: the one calendar and address book each mailbox (and account, and partner client)
had before become their owner's defaults at the URL segment clients were given, with their events
and contacts, so nothing a sync client knows changes."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("mailcore", "0026_imports_jobs")]
AFTER = [("mailcore", "0027_davcoll_collections")]


@pytest.mark.django_db(transaction=True)
def test_existing_collections_become_the_defaults_with_their_contents(plans):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    account = old.get_model("mailcore", "Account").objects.create(name="Acme", plan=old.get_model(
        "mailcore", "Plan").objects.get(code="pro"))
    calendar = old.get_model("mailcore", "Calendar").objects.create(account=account, name="Calendar")
    old.get_model("mailcore", "CalendarEvent").objects.create(
        calendar=calendar, uid="e-1", href="e-1.ics", title="Board", start="2031-03-05T10:00:00Z",
        end="2031-03-05T11:00:00Z", ical="BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", etag="x")
    book = old.get_model("mailcore", "AddressBook").objects.create(account=account, name="Contacts")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    migrated = new.get_model("mailcore", "Calendar").objects.get(pk=calendar.pk)
    migrated_book = new.get_model("mailcore", "AddressBook").objects.get(pk=book.pk)
    event = new.get_model("mailcore", "CalendarEvent").objects.get(uid="e-1")

    assert (migrated.slug, migrated.is_default, migrated.components, migrated.properties) == (
        "calendar", True, "VEVENT,VTODO", {})
    assert (migrated_book.slug, migrated_book.is_default) == ("contacts", True)
    assert (event.calendar_id, event.component, event.due, event.priority) == (calendar.pk, "VEVENT", None, 0)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
