"""The Dovecot fixtures, and a test database Dovecot can open.

pytest-django's SQLite test database lives in memory, where Dovecot's own SQL connection cannot
see it; for the suite's run it becomes a file in a private temporary directory instead.
PostgreSQL's test database (test_<name>) is reachable as it is.
"""
import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from mailcore.tests.dovecot import dovecot, imap_settings, plans  # noqa: F401 (fixtures)

_database_dir: Path | None = None


def pytest_configure(config) -> None:
    global _database_dir
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and not database.get("TEST", {}).get("NAME"):
        _database_dir = Path(tempfile.mkdtemp(prefix="mailwell-testdb-"))
        database.setdefault("TEST", {})["NAME"] = str(_database_dir / "test.sqlite3")


def pytest_unconfigure(config) -> None:
    if _database_dir is not None:
        shutil.rmtree(_database_dir, ignore_errors=True)
