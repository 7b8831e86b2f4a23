"""Point 12's "release from the digest link", end to end: GTUBE arrives over SMTP and is held by the
real rspamd's verdict, the daily digest lands in the Inbox, and its link (no sign-in) puts the
message in the Inbox once, never in Junk, read back from the embedded store and from Dovecot."""
import re

import pytest
from django.core.cache import cache
from django.test import Client

from mailcore.events.models import Event
from mailcore.sweep import job_named, job_run
from protection.models import DomainPolicy, Quarantined
from protection.tests.test_inbound_screening import message, site  # noqa: F401 (the fixture)
from testkit.rspamd import GTUBE

pytestmark = pytest.mark.django_db(transaction=True)  # the listener and Dovecot read committed rows
LINK = re.compile(r"http://testserver/webmail(/quarantine/release/\S+)")


def test_gtube_held_then_released_from_the_digest_link_lands_in_the_inbox_once(site, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    DomainPolicy.objects.filter(domain=site.mailbox.domain).update(refuse_at=20)
    code, reply = site.send(message(body=GTUBE, subject="Held then wanted", sender="Bea <bea@sender.test>"),
                            envelope_from="bea@sender.test")
    assert code == 250 and "held for review" in reply

    cache.delete("sweep-lock:quarantine-digest")
    assert job_run(job_named("quarantine-digest")) == {"digests": 1, "messages": 1, "failures": 0}
    [digest] = site.stored("INBOX")
    assert digest["Subject"] == "1 message held in your quarantine"
    [link] = LINK.findall(digest.get_body(("plain",)).get_content())

    browser = Client()
    assert browser.get(f"/webmail{link}").status_code == 200
    assert browser.post(f"/webmail{link}").status_code == 200
    assert browser.post(f"/webmail{link}").status_code == 409

    inbox = [stored for stored in site.stored("INBOX") if stored["Subject"] == "Held then wanted"]
    assert len(inbox) == 1 and site.stored("Junk") == []
    assert inbox[0]["X-Mailwell-Verdict"] is None and inbox[0]["X-Spam-Score"] == "15.0"
    assert not Quarantined.objects.get(mailbox=site.mailbox).is_waiting
    assert Event.objects.filter(name="email.released").count() == 1
