"""Listing a managed mailbox on Dovecot as a mail client does it: one login serves many requests,
a page costs the same database queries whatever the folder holds, only the page's summaries cross
the wire (no bodies), a connection the server closed is replaced, and a switched-off mailbox is
refused at once although a connection of it is still logged in. Counted at Dovecot (its log) and
at the database, never timed."""
import re
import subprocess
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mailcore.mailboxes.models import Mailbox
from mailcore.store.factory import store_for
from mailcore.store.imap import ImapStore
from mailcore.store.imap_pool import managed_mailbox_login
from testkit.clients import key_client
from testkit.dovecot import managed_mailbox, message
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def mailbox(plans, imap_settings) -> Mailbox:
    return managed_mailbox(password="owner password 1")


@pytest.fixture
def api(mailbox):
    owner = UserFactory(account=mailbox.account)
    return key_client(owner, ["mailboxes:read"])


def logins(dovecot, mailbox: Mailbox) -> int:
    return len(re.findall(rf"imap-login: Info: Login: user=<{re.escape(mailbox.address)}>", dovecot.log()))


def logged_out(dovecot, mailbox: Mailbox) -> list[dict]:
    """Dovecot's summary of each session that ended (bytes out, bodies read), once it is written."""
    pattern = rf"imap\({re.escape(mailbox.address)}\)<[^\n]*Logged out in=(\d+) out=(\d+)[^\n]*body_count=(\d+)"
    for _ in range(100):
        found = re.findall(pattern, dovecot.log())
        if found:
            break
        time.sleep(0.02)
    return [{"in": int(a), "out": int(b), "body_count": int(c)} for a, b, c in found]


def fill(mailbox: Mailbox, count: int, **options) -> None:
    for number in range(count):
        store_for(mailbox).append("INBOX", message(f"Message {number}", **options))


def test_one_login_serves_several_list_requests(api, mailbox, imap_settings):
    fill(mailbox, 3)
    before = logins(imap_settings, mailbox)

    answers = [api.get("/inbox", {"email": mailbox.address}) for _ in range(4)]

    assert [answer.json()["total"] for answer in answers] == [3, 3, 3, 3]
    assert logins(imap_settings, mailbox) - before == 1


def test_a_page_costs_the_same_queries_for_10_or_60_messages(api, mailbox):
    def queries() -> int:
        api.get("/inbox", {"email": mailbox.address})  # the first request may read what later ones cache
        with CaptureQueriesContext(connection) as captured:
            assert api.get("/inbox", {"email": mailbox.address}).status_code == 200
        return len(captured.captured_queries)

    fill(mailbox, 10)
    at_10 = queries()
    fill(mailbox, 50)
    at_60 = queries()

    assert at_10 == at_60
    assert len(api.get("/inbox", {"email": mailbox.address}).json()["messages"]) == 50


def test_a_page_does_not_download_the_messages(mailbox, imap_settings, settings):
    fill(mailbox, 3, pad_to=300_000)
    store = ImapStore(settings.IMAP_HOST, settings.IMAP_PORT, managed_mailbox_login(mailbox.address),
                      settings.DOVECOT_MASTER_PASSWORD, tls=False, timeout=10)  # logs out: Dovecot sums it up

    page = store.list("INBOX")

    assert [m.subject for m in page.messages] == ["Message 2", "Message 1", "Message 0"]
    session = logged_out(imap_settings, mailbox)[-1]
    assert session["body_count"] == 0 and session["out"] < 20_000  # summaries of three 300 kB messages


def test_a_connection_the_server_closed_is_replaced(api, mailbox, imap_settings):
    fill(mailbox, 2)
    assert api.get("/inbox", {"email": mailbox.address}).json()["total"] == 2
    kicked = subprocess.run(["doveadm", "-c", str(imap_settings.directory / "dovecot.conf"), "kick", mailbox.address],
                            capture_output=True, text=True)
    assert kicked.returncode == 0, kicked.stderr

    assert api.get("/inbox", {"email": mailbox.address}).json()["total"] == 2


def test_a_switched_off_mailbox_is_refused_although_its_connection_is_logged_in(api, mailbox):
    fill(mailbox, 1)
    assert api.get("/inbox", {"email": mailbox.address}).status_code == 200

    Mailbox.objects.filter(pk=mailbox.pk).update(is_active=False)

    assert api.get("/inbox", {"email": mailbox.address}).status_code == 502  # as when Dovecot refuses the login
