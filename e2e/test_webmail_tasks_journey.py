"""A mailbox owner makes a second calendar ("Family", pink) on the Calendars page, adds an event to
it (the event form asks which calendar), sees it in the week in the calendar's colour beside one of
the default calendar, then adds two tasks on the Tasks page, ticks one done and deletes the other.
Every page at desktop and phone width: e2e/screenshots/webmail-calendars-*.png, webmail-tasks-*.png."""
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from calendars.models import Calendar, CalendarEvent
from calendars.services import calendar_for, event_create
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def sign_in(page, live_server, address):
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")


def both_widths(page, screenshot, name):
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(name)
    page.set_viewport_size(PHONE)
    screenshot(f"{name}-phone")
    page.set_viewport_size(DESKTOP)


def test_a_second_calendar_an_event_in_it_and_tasks(plans, page, live_server, screenshot):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    default = calendar_for(account=user.account, mailbox=mailbox)
    default.timezone = "UTC"
    default.save()
    event_create(calendar=default, title="Dentist", start=datetime(2027, 3, 2, 8, tzinfo=UTC),
                 end=datetime(2027, 3, 2, 9, tzinfo=UTC))
    page.set_viewport_size(DESKTOP)
    sign_in(page, live_server, mailbox.address)

    page.goto(f"{live_server.url}/webmail/calendar/")
    page.get_by_role("navigation", name="Calendar").get_by_role("link", name="Calendars").click()
    page.get_by_label("Name", exact=True).fill("Family")
    page.get_by_label("Colour", exact=True).fill("#db2777")
    page.get_by_role("button", name="Add calendar").click()
    expect(page.get_by_text("“Family” added.")).to_be_visible()
    family = Calendar.objects.get(mailbox=mailbox, name="Family")
    assert family.color == "#db2777"
    both_widths(page, screenshot, "webmail-calendars")

    page.goto(f"{live_server.url}/webmail/calendar/events/new/?date=2027-03-03")
    page.get_by_label("Title").fill("School play")
    page.get_by_role("combobox", name="Calendar").select_option(label="Family")
    page.get_by_label("Start time").fill("17:00")
    page.get_by_label("End time").fill("18:30")
    page.get_by_role("button", name="Add event").click()
    expect(page.get_by_text("“School play” added.")).to_be_visible()
    assert CalendarEvent.objects.get(title="School play").calendar == family
    chip = page.locator(".cal-event", has_text="School play")
    expect(chip).to_be_visible()
    assert "#db2777" in chip.get_attribute("style")
    assert "#2563eb" in page.locator(".cal-event", has_text="Dentist").get_attribute("style")
    both_widths(page, screenshot, "webmail-calendars-week")

    page.get_by_role("navigation", name="Calendar").get_by_role("link", name="Tasks").click()
    page.get_by_label("Task", exact=True).fill("Buy costume fabric")
    page.get_by_label("Due").fill("2027-03-01")
    page.get_by_label("List").select_option(label="Family")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_text("“Buy costume fabric” added.")).to_be_visible()
    page.get_by_label("Task", exact=True).fill("Call the plumber")
    page.get_by_role("button", name="Add", exact=True).click()
    page.get_by_role("button", name="Mark “Buy costume fabric” as done").click()
    expect(page.get_by_role("button", name="Mark “Buy costume fabric” as not done")).to_be_visible()
    both_widths(page, screenshot, "webmail-tasks")
    page.get_by_role("button", name="Delete “Call the plumber”").click()
    expect(page.get_by_text("“Call the plumber” deleted.")).to_be_visible()
    assert list(CalendarEvent.objects.filter(component="VTODO").values_list("title", "status", "calendar")) == [
        ("Buy costume fabric", "COMPLETED", family.pk)]
