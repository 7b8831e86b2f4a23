"""Release: the held message lands once in the Inbox, read back from the mailbox's store (the
embedded store and a real Dovecot), never in Junk and without our verdict headers."""
import threading

import pytest
from django.db import connections

from mailcore.events.models import Event
from mailcore.store.base import StoreUnavailable
from mailcore.store.factory import store_for
from protection.models import Quarantined, SenderRule
from protection.quarantine import QuarantineGone, quarantine_delete, quarantine_keep, quarantine_release
from testkit.dovecot import managed_mailbox, use_store


def held_message(to: str) -> bytes:
    """A message as the screener keeps it: our headers first, the verdict among them."""
    return (f"Authentication-Results: mail.mailwell.test; spf=pass smtp.mailfrom=news@shop.test; dkim=none; "
            f"dmarc=none header.from=shop.test; arc=none\r\nX-Spam-Score: 11.5\r\nX-Spam-Action: quarantine\r\n"
            f"X-Mailwell-Verdict: junk\r\n"
            f"From: Shop News <news@shop.test>\r\nTo: {to}\r\nSubject: Big sale\r\n"
            f"Message-ID: <sale-1@shop.test>\r\nDate: Wed, 04 Mar 2026 05:06:07 +0000\r\n\r\n"
            f"Everything must go.\r\n").encode()


@pytest.fixture(params=[
    pytest.param("embedded", marks=pytest.mark.django_db(transaction=True)),
    pytest.param("imap", marks=pytest.mark.django_db(transaction=True)),
])
def mailbox(request, settings, plans):
    use_store(request, settings)
    mailbox = managed_mailbox(password="owner password 1")
    store_for(mailbox).ensure_folders()
    return mailbox


def keep(mailbox):
    return quarantine_keep(mailbox=mailbox, raw=held_message(mailbox.address), envelope_from="news@shop.test",
                           score=11.5, reasons=["Many people reported similar messages as spam."], symbols={})


def inbox(mailbox, folder="INBOX"):
    store = store_for(mailbox)
    return [store.fetch(folder, summary.uid).raw for summary in store.list(folder).messages]


def test_a_released_message_is_in_the_inbox_once_without_our_verdict(mailbox):
    item = keep(mailbox)

    released = quarantine_release(item=item, by="owner")

    [raw] = inbox(mailbox)
    assert b"Subject: Big sale" in raw and b"Everything must go." in raw
    assert b"X-Mailwell-Verdict" not in raw and b"X-Spam-Action" not in raw
    assert b"X-Spam-Score: 11.5" in raw and b"Authentication-Results: mail.mailwell.test;" in raw
    assert inbox(mailbox, "Junk") == []
    item.refresh_from_db()
    assert (item.is_waiting, item.released_by, released.allowed) == (False, "owner", None)
    [event] = Event.objects.filter(name="email.released")
    assert (event.account_id, event.data["id"], event.data["released_by"], event.data["sender_allowed"]) == (
        mailbox.account_id, item.public_id, "owner", None)


def test_a_second_release_is_refused_and_delivers_nothing_more(mailbox):
    item = keep(mailbox)
    quarantine_release(item=item, by="owner")

    with pytest.raises(QuarantineGone):
        quarantine_release(item=item, by="partner")

    assert len(inbox(mailbox)) == 1
    assert Event.objects.filter(name="email.released").count() == 1


def test_two_releases_at_once_deliver_one_copy(mailbox):
    item = keep(mailbox)
    barrier, outcomes = threading.Barrier(2), []

    def release(by):
        try:
            barrier.wait()
            quarantine_release(item=Quarantined.objects.get(pk=item.pk), by=by)
            outcomes.append("released")
        except QuarantineGone:
            outcomes.append("gone")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=release, args=(by,)) for by in ("owner", "partner")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["gone", "released"]
    assert len(inbox(mailbox)) == 1
    assert Event.objects.filter(name="email.released").count() == 1


def test_release_can_allow_the_sender_for_the_mailbox_in_the_same_action(mailbox):
    item = keep(mailbox)

    released = quarantine_release(item=item, by="owner", allow_sender=True)

    rule = SenderRule.objects.get(mailbox=mailbox)
    assert (rule.kind, rule.sender, released.allowed) == ("allow", "news@shop.test", rule)
    assert Event.objects.get(name="email.released").data["sender_allowed"] == "news@shop.test"


def test_a_deleted_message_cannot_be_released(mailbox):
    item = keep(mailbox)

    quarantine_delete(item=item, by="owner")

    with pytest.raises(QuarantineGone):
        quarantine_release(item=item, by="owner")
    item.refresh_from_db()
    assert (bytes(item.raw), item.deleted_at is not None) == (b"", True)
    assert inbox(mailbox) == []


@pytest.mark.django_db(transaction=True)
def test_a_store_that_cannot_take_it_leaves_the_message_waiting(settings, plans, imap_settings):
    mailbox = managed_mailbox(password="owner password 1")
    item = keep(mailbox)
    settings.IMAP_PORT = 1  # nothing listens there

    with pytest.raises(StoreUnavailable):
        quarantine_release(item=item, by="owner", allow_sender=True)

    item.refresh_from_db()
    assert item.is_waiting
    assert not SenderRule.objects.exists()
    assert not Event.objects.filter(name="email.released").exists()
