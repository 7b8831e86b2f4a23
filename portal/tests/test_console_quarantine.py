"""The operator's quarantine in the console: every mailbox's held messages, released or deleted there."""
import pytest
from allauth.mfa.totp.internal.auth import TOTP, generate_totp_secret

from mailcore.store.factory import store_for
from portal.tests.test_operator_console import CONSOLE, HTML, sign_in, texts
from protection.models import Quarantined
from protection.tests.conftest import acme, embedded, globex, keep, partner  # noqa: F401 (fixtures)
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db
HELD = "/admin/protection/quarantined/"


@pytest.fixture
def console(client):
    staff = UserFactory(email="olive@mailwell.test", is_staff=True, is_superuser=True)
    secret = generate_totp_secret()
    TOTP.activate(staff, secret)
    sign_in(client, staff, secret)
    assert client.get(CONSOLE, **HTML).status_code == 200
    return client


def test_the_operator_lists_every_mailbox_s_held_messages(console, acme, globex):
    keep(acme.mailbox, "Acme sale")
    keep(globex.mailbox, "Globex sale", reasons=["A virus was found."])

    page = console.get(HELD, **HTML).content.decode()

    assert "Acme sale" in page and "Globex sale" in page and "A virus was found." in page


def test_the_operator_releases_to_the_inbox_once(console, acme):
    item = keep(acme.mailbox, "Acme sale")

    response = console.post(HELD, {"action": "release", "_selected_action": [item.pk]}, follow=True, **HTML)
    again = console.post(HELD, {"action": "release", "_selected_action": [item.pk]}, follow=True, **HTML)

    assert f"{item.public_id} (ann@acme.test): released to the Inbox." in texts(response)
    assert f"{item.public_id}: already released or deleted." in texts(again)
    assert store_for(acme.mailbox).list("INBOX").total == 1
    assert Quarantined.objects.get(pk=item.pk).released_by == "operator olive@mailwell.test"


def test_the_digest_runs_page_warns_when_the_digest_has_stopped(console):
    response = console.get("/admin/protection/digestrun/", **HTML)

    assert any("quarantine-digest job is not running" in text for text in texts(response))
