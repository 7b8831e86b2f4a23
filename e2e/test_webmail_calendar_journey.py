"""A mailbox owner opens Calendar in the webmail (the browser's time zone is taken on the first visit),
makes a weekly event on Monday and Wednesday ending after 6 times, sees it in the week view on those
days, opens one occurrence and moves only that one to Thursday afternoon; the others stay. Every page
at desktop and phone width: e2e/screenshots/webmail-calendar-*.png."""
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from calendars.models import Calendar
from calendars.selectors import occurrences_between
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "mailbox-password-1"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "timezone_id": "Europe/Berlin"}


def sign_in(page, live_server, address):
    page.goto(f"{live_server.url}/webmail/")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/webmail/inbox/")


def both_widths(page, screenshot, name):
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(f"webmail-calendar-{name}")
    page.set_viewport_size(PHONE)
    screenshot(f"webmail-calendar-{name}-phone")
    page.set_viewport_size(DESKTOP)


def test_a_weekly_event_then_one_occurrence_moved(plans, page, live_server, screenshot):
    user = UserFactory(email="owner@example.test", account__plan_code="premium")
    mailbox = make_mailbox(user.account, "ann@example.test", password=PASSWORD)
    sign_in(page, live_server, mailbox.address)

    page.get_by_role("navigation", name="Apps").get_by_role("link", name="Calendar").click()
    expect(page.get_by_text("Times in Europe/Berlin")).to_be_visible()  # preset from the browser, once
    assert Calendar.objects.get(mailbox=mailbox).timezone == "Europe/Berlin"

    page.goto(f"{live_server.url}/webmail/calendar/?view=week&date=2027-03-01")
    page.get_by_role("link", name="New event", exact=True).click()
    page.get_by_label("Title").fill("Team sync")
    page.get_by_label("Starts").fill("2027-03-01")
    page.get_by_label("Start time").fill("09:00")
    page.get_by_label("Ends", exact=True).fill("2027-03-01")
    page.get_by_label("End time").fill("10:00")
    page.get_by_label("Location").fill("Room 2")
    page.get_by_label("Repeat", exact=True).select_option("weekly")
    page.locator("label.cal-weekday", has_text="Mon").locator("input").check()
    page.locator("label.cal-weekday", has_text="Wed").locator("input").check()
    page.get_by_label("After a number of times").check()
    page.get_by_label("Times", exact=True).fill("6")
    page.get_by_label("Green").check(force=True)
    both_widths(page, screenshot, "new-event")
    page.get_by_role("button", name="Add event").click()

    expect(page.get_by_role("status").filter(has_text="“Team sync” added.")).to_be_visible()
    monday = page.get_by_role("group", name="Monday 1 March")
    wednesday = page.get_by_role("group", name="Wednesday 3 March")
    thursday = page.get_by_role("group", name="Thursday 4 March")
    expect(monday.get_by_role("link")).to_contain_text("Team sync 09:00–10:00")
    expect(wednesday.get_by_role("link")).to_contain_text("Team sync 09:00–10:00")
    for other in ("Tuesday 2 March", "Thursday 4 March", "Friday 5 March", "Saturday 6 March", "Sunday 7 March"):
        expect(page.get_by_role("group", name=other).locator(".cal-event")).to_have_count(0)
    both_widths(page, screenshot, "week")

    # one occurrence: open it, change only this event to Thursday 14:00
    wednesday.get_by_role("link", name="Team sync").click()
    expect(page.get_by_role("heading", name="Team sync", level=1)).to_be_visible()
    expect(page.get_by_text("Wed 3 Mar 2027, 09:00–10:00")).to_be_visible()
    expect(page.get_by_text("Weekly on Monday, Wednesday, 6 times")).to_be_visible()
    both_widths(page, screenshot, "event")
    page.get_by_role("link", name="Edit").click()
    expect(page.get_by_label("This event")).to_be_checked()
    expect(page.locator("[data-calendar-repeat]")).to_be_hidden()  # the series' rule is not what changes here
    page.get_by_label("Starts").fill("2027-03-04")
    page.get_by_label("Start time").fill("14:00")
    page.get_by_label("Ends", exact=True).fill("2027-03-04")
    page.get_by_label("End time").fill("15:00")
    both_widths(page, screenshot, "edit-occurrence")
    page.get_by_role("button", name="Save").click()

    expect(page.get_by_role("status").filter(has_text="the others stay as they were")).to_be_visible()
    expect(thursday.get_by_role("link")).to_contain_text("Team sync 14:00–15:00")
    expect(wednesday.locator(".cal-event")).to_have_count(0)
    expect(monday.get_by_role("link")).to_contain_text("Team sync 09:00–10:00")
    both_widths(page, screenshot, "week-moved")

    page.get_by_role("link", name="Next week").click()
    expect(page.get_by_role("group", name="Monday 8 March").get_by_role("link")).to_contain_text("09:00–10:00")
    expect(page.get_by_role("group", name="Wednesday 10 March").get_by_role("link")).to_contain_text("09:00–10:00")

    page.get_by_role("navigation", name="View").get_by_role("link", name="Month").click()
    expect(page.locator(".cal-chip", has_text="Team sync")).to_have_count(6)
    both_widths(page, screenshot, "month")

    # the subscription link, shown once; import and export
    page.get_by_role("navigation", name="Calendar").get_by_role("link", name="Calendar settings").click()
    page.get_by_role("button", name="Create link").click()
    feed_url = page.get_by_label("Subscription link").input_value()
    assert feed_url.startswith(f"{live_server.url}/webmail/calendar/feed/") and feed_url.endswith(".ics")
    both_widths(page, screenshot, "settings")
    page.get_by_role("navigation", name="Calendar").get_by_role("link", name="Import and export").click()
    both_widths(page, screenshot, "import")

    calendar = Calendar.objects.get(mailbox=mailbox)
    starts = [f"{placed.occurrence.start:%a %d %H:%M}" for placed in occurrences_between(
        calendar.events.all(), datetime(2027, 2, 1, tzinfo=UTC), datetime(2027, 4, 1, tzinfo=UTC))]
    assert starts == ["Mon 01 08:00", "Thu 04 13:00", "Mon 08 08:00", "Wed 10 08:00", "Mon 15 08:00",
                      "Wed 17 08:00"]  # UTC; 09:00 and 14:00 in Berlin
