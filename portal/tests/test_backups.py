"""`manage.py backup` and `manage.py restore`, run as an operator runs them (separate processes on
the test database and the test Dovecot's mail directory): a restore drill into another database
and directory brings back every row and every message; a damaged backup is refused."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

from contacts.models import Contact
from contacts.services import address_book_for, contact_create
from mailcore.store.factory import store_for
from testkit.dovecot import managed_mailbox, message
from testkit.factories import make_mailbox, make_message
from testkit.worker_process import ROOT, database_url

pytestmark = pytest.mark.django_db(transaction=True)


def manage(*args: str, **environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url(), **environment}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def drill_database(tmp_path):
    """An empty database to restore into: a new PostgreSQL database beside the test one, or a new file."""
    if connection.vendor == "sqlite":
        yield f"sqlite:///{tmp_path / 'restored.sqlite3'}"
        return
    name = f"restore_drill_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url().rsplit("/", 1)[0] + f"/{name}"
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def count_in(url: str, table_sql: str) -> int:
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", f"from django.db import connection\n"
                             f"c = connection.cursor(); c.execute({table_sql!r}); print(c.fetchone()[0])"],
                            cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip().splitlines()[-1])


def test_a_restore_drill_brings_back_every_row_and_the_embedded_stores_mail(plans, alice, tmp_path, drill_database,
                                                                              settings):
    settings.MAIL_STORE = "embedded"
    mailbox = make_mailbox(alice.account, "ann@example.test")
    store_for(mailbox).append("INBOX", make_message("Quarterly figures", to=mailbox.address))
    for n in range(3):
        contact_create(book=address_book_for(account=alice.account), name=f"Person {n}", email=f"p{n}@x.test")

    made = manage("backup", str(tmp_path / "backups"))
    assert made.returncode == 0, made.stderr[-2000:]
    backup = Path(made.stdout.strip())
    restored = manage("restore", str(backup), "--database-url", drill_database)

    assert restored.returncode == 0, restored.stderr[-2000:]
    assert count_in(drill_database, "SELECT COUNT(*) FROM mailcore_contact") == Contact.objects.count() == 3
    assert count_in(drill_database, "SELECT COUNT(*) FROM mailcore_storedmessage WHERE subject = 'Quarterly figures'") == 1


def test_dovecots_mail_directory_is_backed_up_and_restored(imap_settings, plans, tmp_path, drill_database):
    mailbox = managed_mailbox(password="owner password 1")
    store_for(mailbox).append("INBOX", message("Board minutes"))
    mail_dir = imap_settings.directory / "mail"

    made = manage("backup", str(tmp_path / "backups"), DOVECOT_MAIL_DIR=str(mail_dir))
    assert made.returncode == 0, made.stderr[-2000:]
    restored_mail = tmp_path / "restored-mail"
    restored = manage("restore", made.stdout.strip(), "--database-url", drill_database, "--mail-dir",
                      str(restored_mail))

    assert restored.returncode == 0, restored.stderr[-2000:]
    domain, local = mailbox.address.split("@")[1], mailbox.address.split("@")[0]
    copies = [path for path in (restored_mail / domain / local).rglob("*") if path.is_file()
              and b"Subject: Board minutes" in path.read_bytes()]
    assert len(copies) == 1
    assert copies[0].stat().st_uid == (mail_dir / domain / local).stat().st_uid  # still the mail user's


def test_a_damaged_backup_is_refused_and_nothing_is_restored(plans, alice, tmp_path, drill_database):
    made = manage("backup", str(tmp_path / "backups"))
    backup = Path(made.stdout.strip())
    dump = next(path for path in backup.iterdir() if path.name.startswith("database"))
    dump.write_bytes(dump.read_bytes()[:-10] + b"0123456789")

    restored = manage("restore", str(backup), "--database-url", drill_database)

    assert restored.returncode != 0 and "does not match its manifest" in restored.stderr
