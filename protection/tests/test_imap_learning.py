"""Junk that learns from any IMAP client (Thunderbird, a phone): Dovecot's imapsieve hands a message
moved into Junk to rspamd as spam, and one moved out of Junk as wanted mail, for that mailbox's Bayes
scope; a message deleted from Junk (moved to Trash) teaches nothing. Production's Dovecot files
(docker/dovecot: learn-spam.sieve, learn-ham.sieve, rspamd-learn.sh) on the suite's Dovecot."""
import imaplib
import uuid

import pytest

from mailcore.store.factory import store_for
from protection.rspamd import bayes_counts
from testkit.dovecot import dovecot_learns_with, managed_mailbox
from testkit.factories import make_message

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "owner password 1"
SPAMMY = ("Congratulations winner, claim your free prize now. Cheap pills, casino bonus and crypto profits "
          "guaranteed, limited offer, act now and click the link to unlock your reward {n} today")


@pytest.fixture
def mailbox(plans, imap_settings, rspamd_settings):
    dovecot_learns_with(imap_settings, controller_url=rspamd_settings.controller_url,
                        password=rspamd_settings.password)
    return managed_mailbox(password=PASSWORD)


def owner_client(dovecot, mailbox) -> imaplib.IMAP4:
    """The owner's own mail client: their address and password, no master user."""
    client = imaplib.IMAP4(dovecot.host, dovecot.imap_port, timeout=10)
    client.login(mailbox.address, PASSWORD)
    return client


def move(client: imaplib.IMAP4, folder: str, uid: int, target: str) -> None:
    client.select(folder)
    typ, _ = client.uid("MOVE", str(uid), target)
    assert typ == "OK"


def test_a_move_into_junk_from_an_imap_client_teaches_spam_and_out_of_it_teaches_ham(imap_settings, mailbox):
    store = store_for(mailbox)
    uid = store.append("INBOX", make_message("You won", SPAMMY.format(n=uuid.uuid4().hex), to=mailbox.address))
    assert bayes_counts(scope=mailbox.address) == {"ham": 0, "spam": 0}
    client = owner_client(imap_settings, mailbox)

    move(client, "INBOX", uid, "Junk")

    assert bayes_counts(scope=mailbox.address) == {"ham": 0, "spam": 1}
    (junk,) = store.list("Junk").messages

    move(client, "Junk", junk.uid, "INBOX")
    client.logout()

    # the same message, now wanted: rspamd moves it from spam to ham
    assert bayes_counts(scope=mailbox.address) == {"ham": 1, "spam": 0}
    assert [m.subject for m in store.list("INBOX").messages] == ["You won"] and store.list("Junk").total == 0


def test_deleting_from_junk_teaches_nothing(imap_settings, mailbox):
    store = store_for(mailbox)
    store.append("Junk", make_message("Prize", SPAMMY.format(n=uuid.uuid4().hex), to=mailbox.address))
    (junk,) = store.list("Junk").messages
    client = owner_client(imap_settings, mailbox)

    move(client, "Junk", junk.uid, "Trash")
    client.logout()

    assert bayes_counts(scope=mailbox.address) == {"ham": 0, "spam": 0}
    assert store.list("Trash").total == 1


def test_another_mailboxs_counts_do_not_move(imap_settings, mailbox):
    other = managed_mailbox(password=PASSWORD)
    uid = store_for(mailbox).append("INBOX", make_message("Prize", SPAMMY.format(n=uuid.uuid4().hex)))
    client = owner_client(imap_settings, mailbox)

    move(client, "INBOX", uid, "Junk")
    client.logout()

    assert bayes_counts(scope=mailbox.address) == {"ham": 0, "spam": 1}
    assert bayes_counts(scope=other.address) == {"ham": 0, "spam": 0}
