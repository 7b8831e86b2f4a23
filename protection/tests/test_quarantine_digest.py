"""The daily digest: delivered into the Inbox of each mailbox with newly held mail, branded with
its partner, with signed one-click release links that work without signing in and only once."""
import re
from email.parser import BytesParser
from email.policy import default
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from mailcore.store.factory import store_for
from mailcore.sweep import job_named, job_run
from protection.models import DigestRun, Quarantined
from protection.tests.conftest import keep
from webmail.models import WebmailBrand

pytestmark = pytest.mark.django_db
LINK = re.compile(r"http://testserver/webmail(/quarantine/release/[^\s\"<]+)")


def run_digest():
    """One run of the job, as the next hour's sweep runs it (its hourly lock gone)."""
    cache.delete("sweep-lock:quarantine-digest")
    return job_run(job_named("quarantine-digest"))


def digests(mailbox) -> list[bytes]:
    store = store_for(mailbox)
    return [store.fetch("INBOX", summary.uid).raw for summary in store.list("INBOX").messages
            if "quarantine" in summary.subject]


def text_of(raw: bytes) -> str:
    """The digest's plain-text part as the owner reads it."""
    message = BytesParser(policy=default).parsebytes(raw)
    return message.get_body(("plain",)).get_content()


def link_in(mailbox) -> str:
    [link] = LINK.findall(text_of(digests(mailbox)[0]))
    return link


def test_a_mailbox_with_new_held_mail_gets_a_branded_digest_with_release_links(partner, acme):
    WebmailBrand.objects.create(partner=partner, brand_name="Acme Hosting")
    keep(acme.mailbox, "Big sale")
    keep(acme.mailbox, "Cheap pills")

    assert run_digest() == {"digests": 1, "messages": 2, "failures": 0}

    [raw] = digests(acme.mailbox)
    head, text = raw.decode().split("\r\n\r\n", 1)[0], text_of(raw)
    assert 'From: "Acme Hosting" <postmaster@' in head and "Subject: 2 messages held in your quarantine" in head
    assert "Big sale" in text and "Cheap pills" in text and text.rstrip().endswith("Acme Hosting")
    assert len(set(LINK.findall(text))) == 2
    run = DigestRun.objects.get()
    assert (run.digests_sent, run.messages_listed, run.failures, run.finished_at is not None) == (1, 2, 0, True)


def test_no_digest_without_something_new_and_at_most_one_a_day(acme):
    assert run_digest() == {"digests": 0, "messages": 0, "failures": 0}  # nothing held
    keep(acme.mailbox, "Big sale")
    run_digest()
    keep(acme.mailbox, "Later")

    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        assert run_digest() == {"digests": 0, "messages": 0, "failures": 0}  # a day has not passed
    assert len(digests(acme.mailbox)) == 1
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        assert run_digest() == {"digests": 1, "messages": 1, "failures": 0}  # only the new one
    assert len(digests(acme.mailbox)) == 2
    assert DigestRun.objects.count() == 4


def test_the_link_releases_without_signing_in_and_only_once(client, acme):
    item = keep(acme.mailbox, "Big sale")
    run_digest()
    link = link_in(acme.mailbox)

    page = client.get(f"/webmail{link}")
    assert page.status_code == 200 and "Big sale" in page.content.decode()
    assert Quarantined.objects.get(pk=item.pk).is_waiting  # a GET (a link scanner) releases nothing

    released = client.post(f"/webmail{link}")
    assert released.status_code == 200 and "The message is in your Inbox now." in released.content.decode()
    assert [s.subject for s in store_for(acme.mailbox).list("INBOX").messages if s.subject == "Big sale"] == [
        "Big sale"]

    again = client.post(f"/webmail{link}")
    assert again.status_code == 409 and "only once" in again.content.decode()
    assert len([s for s in store_for(acme.mailbox).list("INBOX").messages if s.subject == "Big sale"]) == 1
    assert Quarantined.objects.get(pk=item.pk).released_by == "digest ann@acme.test"


def test_a_tampered_link_releases_nothing(client, acme):
    item = keep(acme.mailbox, "Big sale")
    run_digest()
    link = link_in(acme.mailbox)

    response = client.post(f"/webmail{link[:-3]}abc")

    assert response.status_code == 400
    assert Quarantined.objects.get(pk=item.pk).is_waiting
