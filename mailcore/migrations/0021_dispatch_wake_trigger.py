"""On PostgreSQL, a committed INSERT of outbound mail NOTIFYs the worker itself (mailcore.jobs):
the send request saves the separate `SELECT pg_notify(...)` round trip it made after its INSERT.
One notification per statement; PostgreSQL delivers it at commit, and folds duplicates of one
transaction into one. SQLite has no NOTIFY (its worker polls): nothing to do there."""
from django.db import migrations

# mailcore.jobs.WAKE_CHANNEL and DISPATCH_DUE_MAIL as they were when this was written.
CREATE = """
CREATE FUNCTION mailwell_wake_dispatch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('mailwell_jobs', 'mailcore.tasks.dispatch_due_mail');
    RETURN NULL;
END $$;
CREATE TRIGGER mailwell_wake_dispatch AFTER INSERT ON mailcore_outboundmessage
    FOR EACH STATEMENT EXECUTE FUNCTION mailwell_wake_dispatch();
"""
DROP = """
DROP TRIGGER IF EXISTS mailwell_wake_dispatch ON mailcore_outboundmessage;
DROP FUNCTION IF EXISTS mailwell_wake_dispatch();
"""


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0020_scale_partner_indexes")]

    operations = [migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP))]
