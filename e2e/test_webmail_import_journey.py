"""A mailbox owner imports a calendar file too large to import within the request (300 events): the
answer is its progress page, which updates itself (htmx) while the real worker (`manage.py worker`,
a process of its own) imports the events, until it says it is finished; the calendar then shows them.
A file of 500 nested events is refused on the import page at once. Screenshots at desktop and phone
width: e2e/screenshots/webmail-import-*.png."""
import re
import uuid

import pytest
from playwright.sync_api import expect

from mailcore.accounts.models import Account, Plan
from calendars.models import CalendarEvent
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.mailboxes.services import mailbox_create
from testkit.worker_process import WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
EVENTS = 300


def ics(count: int) -> bytes:
    events = "".join(
        f"BEGIN:VEVENT\r\nUID:ev{n}@other.test\r\nDTSTAMP:20260101T000000Z\r\n"
        f"DTSTART:2027{1 + n % 12:02}{1 + n % 28:02}T090000Z\r\nDTEND:2027{1 + n % 12:02}{1 + n % 28:02}T100000Z\r\n"
        f"SUMMARY:Event {n}\r\nEND:VEVENT\r\n"
        for n in range(count))
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Other//EN\r\n{events}END:VCALENDAR\r\n".encode()


def nested_ics(depth: int = 500) -> bytes:
    opened = "".join(f"BEGIN:VEVENT\r\nUID:n{n}\r\nDTSTART:20270101T090000Z\r\n" for n in range(depth))
    closed = "END:VEVENT\r\n" * depth
    return f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\n{opened}{closed}END:VCALENDAR\r\n".encode()


def test_an_owner_watches_a_large_calendar_import_finish(plans, settings, page, live_server, screenshot, tmp_path):
    settings.MAIL_STORE = "embedded"
    account = Account.objects.create(name="Owner", plan=Plan.objects.get(code="pro"))
    domain = domain_mark_verified(domain=domain_create(account=account, name=f"d{uuid.uuid4().hex[:10]}.test"))
    mailbox = mailbox_create(domain=domain, local_part="ann", password=PASSWORD, display_name="Ann")
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(mailbox.address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")
    page.goto(f"{live_server.url}/webmail/calendar/import/")
    upload = page.get_by_label(".ics file", exact=True)

    # a hostile file: refused at once, nothing imported
    upload.set_input_files(files=[{"name": "nested.ics", "mimeType": "text/calendar", "buffer": nested_ics()}])
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_text("Nothing was imported: Not an iCalendar file: Line 7: a VEVENT inside another VEVENT"))\
        .to_be_visible()
    screenshot("webmail-import-refused")

    # a large file: its progress page, while no worker runs yet
    page.get_by_label(".ics file", exact=True).set_input_files(
        files=[{"name": "year.ics", "mimeType": "text/calendar", "buffer": ics(EVENTS)}])
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page).to_have_url(re.compile(r"/webmail/calendar/import/\d+/$"))
    expect(page.get_by_role("status")).to_have_text(f"0 of {EVENTS} events done (0%).")
    expect(page.get_by_role("link", name="Check again")).to_be_visible()
    screenshot("webmail-import-progress")
    page.set_viewport_size(PHONE)
    screenshot("webmail-import-progress-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    # the worker imports; the page follows by itself (no reload)
    worker = WorkerProcess(tmp_path / "worker")
    try:
        worker.start()
        expect(page.get_by_role("heading", name="Import finished")).to_be_visible(timeout=120_000)
    finally:
        worker.stop()
    expect(page.get_by_role("status")).to_have_text(f"{EVENTS} events added, 0 updated.")
    screenshot("webmail-import-finished")
    page.set_viewport_size(PHONE)
    screenshot("webmail-import-finished-phone")
    assert CalendarEvent.objects.filter(calendar__mailbox=mailbox).count() == EVENTS
    page.get_by_role("link", name="Show my calendar").click()
    expect(page).to_have_url(re.compile(r"/webmail/calendar/$"))
