# Written by hand: the table Dovecot's quota_clone plugin keeps each mailbox's usage in
# (docker/dovecot/dovecot-dict-quota-maps.conf.ext), so the app reads a mailbox's usage with one
# query instead of an IMAP login as the mailbox. Dovecot writes it (an upsert per change); the app
# only reads it. The same SQL runs on SQLite and PostgreSQL.
from django.db import migrations

CREATE_TABLE = """
CREATE TABLE dovecot_quota (
    username varchar(320) NOT NULL PRIMARY KEY,
    bytes bigint NOT NULL DEFAULT 0,
    messages integer NOT NULL DEFAULT 0
)
"""


class Migration(migrations.Migration):

    dependencies = [
        ('mailcore', '0021_dispatch_wake_trigger'),
    ]

    operations = [
        migrations.RunSQL(CREATE_TABLE, "DROP TABLE dovecot_quota"),
    ]
