"""Fixtures shared by every test: the standing actors, API clients for them, and real servers.

alice owns a premium account, bob is her teammate in the same account, charlie is a stranger
with an account of his own who must get 404 for everything of alice's; ann@example.test is
alice's hosted mailbox and `stranger` an API client with charlie's key. `relay` is a real SMTP
server taking outgoing mail, `receiver` a real HTTPS webhook receiver, `rspamd_settings` the
session's rspamd (with clamd behind it) scanning for this test (testkit/).
"""
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from testkit.dns_server import _dns_server, dns_zone  # noqa: F401 (fixtures)
from testkit.dovecot import dovecot, imap_settings, plans  # noqa: F401 (fixtures)
from testkit.clamd import clamd  # noqa: F401 (fixtures)
from testkit.rspamd import rspamd, rspamd_settings  # noqa: F401 (fixtures)
from mailcore.apikeys.scopes import USER_SCOPES
from testkit.clients import login_client, new_key
from testkit.factories import UserFactory, make_mailbox
from testkit.https_receiver import https_receiver
from testkit.smtp_sink import smtp_sink

_database_dir: Path | None = None


def pytest_configure(config) -> None:
    """Dovecot reads the test database through its own connection: on SQLite it must be a file
    (pytest-django's default is in memory). PostgreSQL's test database is reachable as it is."""
    global _database_dir
    database = django_settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3" and not database.get("TEST", {}).get("NAME"):
        _database_dir = Path(tempfile.mkdtemp(prefix="mailwell-testdb-"))
        database.setdefault("TEST", {})["NAME"] = str(_database_dir / "test.sqlite3")


def pytest_unconfigure(config) -> None:
    if _database_dir is not None:
        shutil.rmtree(_database_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings, tmp_path):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": str(tmp_path)}}
    settings.API_KEY_USAGE_FLUSH_SECONDS = 0


@pytest.fixture
def alice(db):
    return UserFactory(email="alice@example.test", account__plan_code="premium")


@pytest.fixture
def bob(alice):
    return UserFactory(email="bob@example.test", account=alice.account)


@pytest.fixture
def charlie(db):
    return UserFactory(email="charlie@example.test", account__plan_code="free")


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def ann(alice):
    """alice's hosted mailbox ann@example.test (the domain example.test is created, verified)."""
    return make_mailbox(alice.account, "ann@example.test")


@pytest.fixture
def stranger(charlie):
    """An API client holding charlie's key with every scope of his account: 404 for all of alice's."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(charlie, scopes=list(USER_SCOPES)))
    return client


@pytest.fixture
def relay(settings):
    """A real SMTP server on loopback as the outgoing relay (SMTP_URL); its `messages` are what left."""
    with smtp_sink() as (port, sink):
        settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
        yield sink


@pytest.fixture
def receiver(settings, tmp_path):
    """A customer's HTTPS webhook receiver on loopback that checks signatures (set `.secret`)."""
    with https_receiver(tmp_path) as receiver:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = receiver.ca_path
        settings.WEBHOOK_CONCURRENCY = 1
        yield receiver


@pytest.fixture
def alice_api(alice):
    return login_client(alice)


@pytest.fixture
def charlie_api(charlie):
    return login_client(charlie)


@pytest.fixture
def charlie_factory(db):
    """For transactional tests: make a fresh stranger after the plans exist."""
    return lambda: UserFactory(account__plan_code="free")
