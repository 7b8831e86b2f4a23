"""A hosting partner opens a client mailbox, imports the client's contacts from a CSV (preview, then
import), creates a campaign with two steps, sends a test, sends the campaign, and once the engine has
run sees the sent counts in the stats."""
import re

import pytest
from playwright.sync_api import expect

from billing.services.mailboxes import partner_mailbox_open
from campaigns.engine import campaigns_run_due
from campaigns.models import Campaign, Enrollment
from contacts.models import Contact
from mailcore.outbound.models import OutboundMessage
from mailcore.partners.models import PartnerClient
from mailcore.partners.services import hosting_partner_enable, slots_grant
from testkit.factories import PASSWORD, UserFactory, make_domain

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}
CSV = ("email,name,company,group\n"
       "ann@bakery.test,Ann Baker,Bakery,Customers\n"
       "carl@forge.test,Carl Smith,Forge,Customers\n"
       "dina@mill.test,Dina Miller,Mill,\n"
       "broken-address,Nobody,,\n")


def partner_with_a_client_mailbox():
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=3)
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    partner_mailbox = partner_mailbox_open(partner=partner, domain=domain, local_part="news",
                                           password="a-long-password", plan_id="premium", display_name="Acme News")
    return user, partner_mailbox


def test_a_partner_imports_contacts_and_sends_a_two_step_campaign(plans, page, live_server, log_in, screenshot):
    user, partner_mailbox = partner_with_a_client_mailbox()

    def shot(name: str) -> None:
        for frame in page.locator("iframe.campaign-preview").all():  # a frame paints once it has been in view
            frame.scroll_into_view_if_needed()
            expect(frame.content_frame.locator("body")).to_contain_text("Unsubscribe")
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(name)

    def both(name: str) -> None:
        shot(name)
        page.set_viewport_size(PHONE)
        shot(f"{name}-phone")
        page.set_viewport_size(DESKTOP)

    log_in(user.email, PASSWORD)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Mailboxes").click()
    page.get_by_role("link", name="news@acme.test", exact=True).click()
    expect(page.get_by_role("heading", level=1, name="news@acme.test")).to_be_visible()

    # contacts: the CSV preview saves nothing, then the import applies the valid rows
    page.get_by_role("link", name="Contacts", exact=True).click()
    expect(page.get_by_role("heading", name="No contacts yet")).to_be_visible()
    page.get_by_role("link", name="Import CSV").click()
    page.get_by_label("CSV file").set_input_files(
        files=[{"name": "acme.csv", "mimeType": "text/csv", "buffer": CSV.encode()}])
    page.get_by_role("button", name="Preview import").click()
    expect(page.get_by_role("heading", level=1, name="Check the import")).to_be_visible()
    expect(page.get_by_role("table")).to_contain_text("'broken-address' is not a valid address.")
    assert Contact.objects.count() == 0
    both("campaign-journey-csv-preview")
    page.get_by_role("button", name="Import 3 contacts").click()
    expect(page.locator("#messages")).to_contain_text("Imported: 3 contacts added, 0 updated, 1 skipped.")
    expect(page.locator("#contacts")).to_contain_text("ann@bakery.test")
    assert Contact.objects.count() == 3
    both("campaign-journey-contacts")

    # the search swaps the table in place
    page.get_by_label("Search").fill("forge")
    expect(page.locator("#contacts")).not_to_contain_text("ann@bakery.test")
    expect(page.locator("#contacts")).to_contain_text("carl@forge.test")

    # a campaign to the Customers group, first with a bad segment filter
    page.get_by_role("link", name="Campaigns", exact=True).click()
    expect(page.get_by_role("heading", name="No campaigns yet")).to_be_visible()
    page.get_by_role("link", name="New campaign").click()
    page.get_by_label("Campaign name").fill("Spring welcome")
    page.get_by_label("Subject").fill("Hello {{first_name}}")
    page.get_by_label("Message (HTML)").fill("<h1>Welcome, {{name}}</h1><p>Fresh bread every morning.</p>")
    page.get_by_label("Send to").select_option(label="Group: Customers")
    page.get_by_label("Sender's postal address").fill("Acme Ltd, 1 Market Street, Springfield")
    page.get_by_text("Narrow with a segment filter").click()
    page.get_by_label("Segment filter (JSON)").fill('[{"field": "salary", "op": "equals", "value": "x"}]')
    page.get_by_role("button", name="Create draft").click()
    expect(page.locator("#id_segment_filter_error")).to_contain_text("Unknown field or operator")
    assert Campaign.objects.count() == 0
    page.get_by_label("Segment filter (JSON)").fill("")
    page.get_by_role("button", name="Create draft").click()
    page.wait_for_url(re.compile(r"/campaigns/\d+/$"))
    expect(page.get_by_role("heading", level=1)).to_contain_text("Spring welcome")

    # a second step with an A/B subject
    add = page.locator("#step-add")
    add.get_by_label("Wait (hours)").fill("48")
    add.get_by_label("Subject", exact=True).fill("Two days in")
    add.get_by_label("Subject B (A/B test)").fill("Still hungry, {{first_name}}?")
    add.get_by_label("Message (HTML)").fill("<p>Our croissants are back.</p>")
    add.get_by_role("button", name="Add step").click()
    expect(page.locator("#messages")).to_contain_text("Step 2 added.")
    expect(page.locator("iframe.campaign-preview")).to_have_count(2)
    preview = page.frame_locator("iframe.campaign-preview").first
    expect(preview.get_by_role("heading", name="Welcome, Ann Baker")).to_be_visible()

    # a test send: one message marked [Test], nobody enrolled
    test = page.locator("#campaign-test")
    test.get_by_label("Send a test to").fill("partner@example.test")
    test.get_by_role("button", name="Send test").click()
    expect(test).to_contain_text("Sent to partner@example.test")
    # not a contact: personalised for the audience's first contact, as the preview shows it
    assert list(OutboundMessage.objects.values_list("payload__subject", flat=True)) == ["[Test] Hello Ann"]
    assert not Enrollment.objects.exists()
    both("campaign-journey-draft")

    # send, confirmed in the dialog
    dialogs = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.get_by_role("link", name="Send…").click()
    expect(page.locator("#messages")).to_contain_text("Spring welcome is sending to 2 contacts.")
    assert dialogs and dialogs[0].startswith("Send Spring welcome to 2 contacts?")

    campaigns_run_due()
    page.reload()
    expect(page.locator("#total-sent")).to_have_text("2")
    expect(page.locator("#stats")).to_contain_text("Opened (approximate)")
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    assert sorted(OutboundMessage.objects.exclude(payload__subject__startswith="[Test]")
                  .values_list("payload__subject", flat=True)) == ["Hello Ann", "Hello Carl"]
    both("campaign-journey-sending")
    # a full-page capture leaves frames out of view blank: the preview on its own
    step_card = page.locator("article.campaign-step").first
    step_card.scroll_into_view_if_needed()
    step_card.screenshot(path=str(screenshot("campaign-journey-sending").parent / "campaign-journey-preview.png"))

    page.goto(f"{live_server.url}/portal/mailboxes/{partner_mailbox.pk}/campaigns/")
    expect(page.get_by_role("table")).to_contain_text("Spring welcome")
    both("campaign-journey-list")
