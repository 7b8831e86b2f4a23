"""The view Dovecot's SQL passdb/userdb read: one row per active service-managed mailbox.

The same SQL runs on SQLite and PostgreSQL. Provisioning a mailbox is inserting a row into
mailcore_mailbox; disabling it is flipping is_active; no command runs per mailbox.
"""
from django.db import migrations

CREATE = """
CREATE VIEW dovecot_users AS
SELECT m.address AS username,
       m.password_hash AS password,
       '*:storage=' || (COALESCE(mp.storage_mb, ap.storage_mb) + m.extra_storage_mb) || 'M' AS quota_rule
FROM mailcore_mailbox m
JOIN mailcore_account a ON a.id = m.account_id
JOIN mailcore_plan ap ON ap.id = a.plan_id
LEFT JOIN mailcore_plan mp ON mp.id = m.plan_id
WHERE m.is_active AND m.kind = 'managed'
"""


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0003_mail_core")]
    operations = [migrations.RunSQL(CREATE, "DROP VIEW dovecot_users")]
