"""Large and hostile .ics and .vcf imports in the webmail: a file of 500 nested components is refused
at once with a clear error and nothing written (it used to hold a worker past its timeout, or end in
a RecursionError 500); a file over the 5,000 cap is refused the same way; a 5,000-event file is
accepted, the page shows its progress (the htmx region and the no-JS page), and the real worker
(`manage.py worker`, a process of its own) imports every event exactly once, also when it is killed
in the middle and started again; a 5,000-card file the same; another mailbox's import is a 404."""
import html
import re
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from calendars.models import CalendarEvent
from calendars.services import calendar_for
from contacts.models import Contact
from contacts.services import address_book_for
from imports.models import ImportItem, ImportJob
from imports.services import INLINE_MAX_ITEMS, import_job_advance
from portal.tests.conftest import WEBMAIL_PASSWORD
from testkit.factories import make_mailbox
from testkit.worker_process import WorkerProcess, wait_until

pytestmark = pytest.mark.parametrize("webmail_owner", ["embedded"], indirect=True)

CALENDAR_IMPORT = "/webmail/calendar/import/"
CONTACTS_IMPORT = "/webmail/contacts/import/"


def ics(count: int) -> bytes:
    events = "".join(
        f"BEGIN:VEVENT\r\nUID:ev{n}@other.test\r\nDTSTAMP:20260101T000000Z\r\n"
        f"DTSTART:2027{1 + n % 12:02}{1 + n % 28:02}T090000Z\r\nDTEND:2027{1 + n % 12:02}{1 + n % 28:02}T100000Z\r\n"
        f"SUMMARY:Event {n}\r\nEND:VEVENT\r\n"
        for n in range(count))
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Other//EN\r\n{events}END:VCALENDAR\r\n".encode()


def nested_ics(depth: int = 500) -> bytes:
    """What the report sent: 500 VEVENTs each inside the one before, about 13 KB."""
    opened = "".join(f"BEGIN:VEVENT\r\nUID:n{n}\r\nDTSTART:20270101T090000Z\r\n" for n in range(depth))
    closed = "END:VEVENT\r\n" * depth
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\n{opened}{closed}END:VCALENDAR\r\n".encode()


def vcf(count: int) -> bytes:
    return "".join(f"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:c{n}@other.test\r\nFN:Person {n}\r\nN:{n};Person;;;\r\n"
                   f"EMAIL;TYPE=INTERNET:p{n}@people.test\r\nEND:VCARD\r\n" for n in range(count)).encode()


def nested_vcf(depth: int = 500) -> bytes:
    opened = "".join(f"BEGIN:VCARD\r\nVERSION:3.0\r\nFN:N{n}\r\n" for n in range(depth))
    return (opened + "END:VCARD\r\n" * depth).encode()


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def upload(name: str, content: bytes) -> dict:
    return {"file": SimpleUploadedFile(name, content)}


@pytest.fixture
def owner(client, webmail_owner):
    response = client.post("/webmail/", {"address": webmail_owner.address, "password": WEBMAIL_PASSWORD})
    assert response.status_code == 302
    return client


def revision(collection) -> int:
    return type(collection).objects.values_list("revision", flat=True).get(pk=collection.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "name", "content", "error"), [
    (CALENDAR_IMPORT, "nested.ics", nested_ics(),
     "Nothing was imported: Not an iCalendar file: Line 7: a VEVENT inside another VEVENT; components may not "
     "hold one of their own kind."),
    (CONTACTS_IMPORT, "nested.vcf", nested_vcf(),
     "Nothing was imported: Not a vCard file: Line 4: a VCARD inside another VCARD; components may not hold one "
     "of their own kind."),
    (CALENDAR_IMPORT, "deep.ics", b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nBEGIN:VALARM\r\nBEGIN:X-A\r\nBEGIN:X-B\r\n"
                                  b"END:X-B\r\nEND:X-A\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
     "Nothing was imported: Not an iCalendar file: Line 5: components nest 5 deep; at most 4 are allowed."),
    (CALENDAR_IMPORT, "unclosed.ics", b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nEND:VCALENDAR\r\n",
     "Nothing was imported: Not an iCalendar file: Line 4: END:VCALENDAR where END:VEVENT was expected."),
], ids=["nested-events", "nested-cards", "too-deep", "unbalanced"])
def test_a_nested_file_is_refused_at_once_with_a_clear_error_and_nothing_changes(
        owner, webmail_owner, url, name, content, error):
    calendar = calendar_for(account=webmail_owner.account, mailbox=webmail_owner)
    book = address_book_for(account=webmail_owner.account, mailbox=webmail_owner)
    before = (revision(calendar), revision(book))
    started = time.monotonic()

    response = owner.post(url, upload(name, content))

    assert time.monotonic() - started < 2  # it held a web worker 20-30 s (events) or ended in a 500 (cards)
    assert response.status_code == 400
    assert error in text(response)
    assert not CalendarEvent.objects.exists() and not Contact.objects.exists() and not ImportJob.objects.exists()
    assert (revision(calendar), revision(book)) == before


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "content", "error"), [
    (CALENDAR_IMPORT, ics(5001), "Nothing was imported: Not an iCalendar file: The file holds more than 5000 events; "
                                 "at most 5000 can be imported at once."),
    (CONTACTS_IMPORT, vcf(5001), "Nothing was imported: Not a vCard file: The file holds more than 5000 vCards; "
                                 "at most 5000 can be imported at once."),
], ids=["events", "cards"])
def test_a_file_over_the_cap_is_refused_and_nothing_changes(owner, url, content, error):
    response = owner.post(url, upload("many", content))

    assert response.status_code == 400
    assert error in text(response)
    assert not CalendarEvent.objects.exists() and not Contact.objects.exists() and not ImportJob.objects.exists()


@pytest.mark.django_db
def test_a_small_file_is_imported_before_the_page_answers(owner, webmail_owner):
    response = owner.post(CALENDAR_IMPORT, upload("few.ics", ics(INLINE_MAX_ITEMS)))

    assert response.status_code == 200
    assert f"Imported: {INLINE_MAX_ITEMS} new events, 0 updated." in text(response)
    assert CalendarEvent.objects.filter(calendar__mailbox=webmail_owner).count() == INLINE_MAX_ITEMS
    assert not ImportItem.objects.exists()


@pytest.mark.django_db
def test_a_large_file_shows_its_progress_and_another_mailbox_cannot_see_it(owner, webmail_owner, client, alice):
    response = owner.post(CALENDAR_IMPORT, upload("year.ics", ics(INLINE_MAX_ITEMS + 1)))

    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/webmail/calendar/import/{job.pk}/"
    assert (job.kind, job.total, job.position, job.status) == ("events", INLINE_MAX_ITEMS + 1, 0, "queued")
    page = owner.get(response["Location"])
    assert "Importing year.ics… 0 of 101 events done (0%)." in text(page)
    assert f'hx-get="/webmail/calendar/import/{job.pk}/" hx-trigger="every 1s"' in page.content.decode()
    assert 'href="/webmail/calendar/import/%d/">Check again</a>' % job.pk in page.content.decode()
    region = owner.get(response["Location"], headers={"HX-Request": "true"})
    assert region.content.decode().lstrip().startswith('<section id="import-progress"')
    assert "See its progress" in text(owner.get(CALENDAR_IMPORT))

    other = make_mailbox(alice.account, "bea@example.test", password=WEBMAIL_PASSWORD)
    client.logout()
    assert client.post("/webmail/", {"address": other.address, "password": WEBMAIL_PASSWORD}).status_code == 302
    assert client.get(f"/webmail/calendar/import/{job.pk}/").status_code == 404
    assert client.get(f"/webmail/contacts/import/{job.pk}/").status_code == 404


def progress(job: ImportJob) -> int:
    return ImportJob.objects.values_list("position", flat=True).get(pk=job.pk)


def finished(job: ImportJob) -> bool:
    return ImportJob.objects.values_list("status", flat=True).get(pk=job.pk) == ImportJob.Status.DONE


@pytest.mark.django_db(transaction=True)
def test_the_worker_imports_five_thousand_events_exactly_once_even_when_killed_in_the_middle(
        owner, webmail_owner, tmp_path):
    calendar = calendar_for(account=webmail_owner.account, mailbox=webmail_owner)
    response = owner.post(CALENDAR_IMPORT, upload("five-thousand.ics", ics(5000)))
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/webmail/calendar/import/{job.pk}/"
    worker = WorkerProcess(tmp_path / "worker")
    try:
        worker.start()
        wait_until(lambda: progress(job) >= 300, timeout=120, what="300 events imported", workers=[worker])
        worker.kill()  # SIGKILL in the middle of a batch: an item's transaction either committed or never was
        killed_at = progress(job)
        assert 300 <= killed_at < 5000
        page = text(owner.get(response["Location"]))
        assert f"{killed_at} of 5000 events done" in page
        worker.start()
        wait_until(lambda: finished(job), timeout=600, what="the import finished", workers=[worker])
    finally:
        worker.stop()
    job.refresh_from_db()
    assert (job.created, job.updated, job.failed, job.position, job.errors) == (5000, 0, 0, 5000, [])
    events = CalendarEvent.objects.filter(calendar=calendar)
    assert events.count() == 5000
    assert set(events.values_list("uid", flat=True)) == {f"ev{n}@other.test" for n in range(5000)}
    assert revision(calendar) == 5000  # one change logged for sync clients per event: none applied twice
    assert not ImportItem.objects.exists()
    assert "Import finished 5000 events added, 0 updated." in text(owner.get(response["Location"]))
    assert "Traceback" not in worker.output(), worker.output()[-4000:]


@pytest.mark.django_db(transaction=True)
def test_the_worker_imports_five_thousand_contacts_exactly_once(owner, webmail_owner, tmp_path):
    book = address_book_for(account=webmail_owner.account, mailbox=webmail_owner)
    response = owner.post(CONTACTS_IMPORT, upload("phone.vcf", vcf(5000)))
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/webmail/contacts/import/{job.pk}/"
    assert "Importing phone.vcf… 0 of 5000 contacts done (0%)." in text(owner.get(response["Location"]))
    worker = WorkerProcess(tmp_path / "worker")
    try:
        worker.start()
        wait_until(lambda: finished(job), timeout=600, what="the import finished", workers=[worker])
    finally:
        worker.stop()
    job.refresh_from_db()
    assert (job.created, job.updated, job.failed) == (5000, 0, 0)
    contacts = Contact.objects.filter(book=book)
    assert contacts.count() == 5000
    assert set(contacts.values_list("email", flat=True)) == {f"p{n}@people.test" for n in range(5000)}
    assert revision(book) == 5000
    page = text(owner.get(response["Location"]))
    assert "Import finished 5000 contacts added, 0 updated." in page and "Show my contacts" in page


@pytest.mark.django_db
def test_a_card_that_cannot_be_imported_is_listed_and_the_rest_go_in(owner, webmail_owner):
    cards = vcf(INLINE_MAX_ITEMS) + b"BEGIN:VCARD\r\nVERSION:3.0\r\nTEL:+44 1234\r\nEND:VCARD\r\n"
    response = owner.post(CONTACTS_IMPORT, upload("phone.vcf", cards))
    job = ImportJob.objects.get()

    import_job_advance(job_id=job.pk, budget_seconds=None)  # what the worker's job runs

    page = text(owner.get(response["Location"]))
    assert f"Import finished {INLINE_MAX_ITEMS} contacts added, 0 updated, 1 not imported." in page
    assert f"Card {INLINE_MAX_ITEMS + 1}: no name and no email address." in page
    assert Contact.objects.filter(book__mailbox=webmail_owner).count() == INLINE_MAX_ITEMS

