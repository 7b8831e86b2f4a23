"""A hosting partner creates a client mailbox (after a first inline error), edits its identity, renews
it and deletes it, confirming in the browser's dialog."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from mailcore.partners.services import hosting_partner_enable
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import slots_grant
from testkit.factories import PASSWORD, UserFactory, make_domain

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def partner_with_a_verified_domain():
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=3)
    domain = make_domain(user.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    return user, partner, domain


def test_a_partner_creates_edits_renews_and_deletes_a_mailbox(plans, page, live_server, log_in, screenshot):
    user, partner, domain = partner_with_a_verified_domain()

    def shot(name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")  # a full-page shot taken scrolled draws the sticky bar mid-page
        screenshot(name)
    log_in(user.email, PASSWORD)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Mailboxes").click()
    expect(page.get_by_role("heading", name="No mailboxes yet")).to_be_visible()
    shot("mailboxes-empty")

    page.get_by_role("link", name="Create your first mailbox").click()
    expect(page.get_by_role("heading", level=1, name="New mailbox")).to_be_visible()
    shot("mailbox-new")

    # a short password: the form comes back with the error next to the field, nothing is created
    page.get_by_label("Address, the part before the @").fill("ann")
    page.get_by_label("Domain").select_option(label="acme.test")
    page.get_by_label("Password").fill("short")
    page.get_by_label("Display name").fill("Ann Smith")
    page.get_by_role("button", name="Create mailbox").click()
    password_errors = page.locator("#id_password_error")
    expect(password_errors).to_contain_text("At least 8 characters")
    expect(page.get_by_label("Password")).to_be_focused()
    expect(page.get_by_label("Address, the part before the @")).to_have_value("ann")
    assert PartnerMailbox.objects.count() == 0
    shot("mailbox-new-error")

    page.get_by_label("Password").fill("a-long-password")
    page.get_by_role("button", name="Create mailbox").click()
    page.wait_for_url(re.compile(r"/portal/mailboxes/\d+/$"))
    expect(page.get_by_role("heading", level=1, name="ann@acme.test")).to_be_visible()
    expect(page.locator("#messages")).to_contain_text("Mailbox ann@acme.test created")
    created = PartnerMailbox.objects.select_related("mailbox").get()
    assert created.mailbox.display_name == "Ann Smith"
    shot("mailbox-detail")

    # identity
    identity = page.locator("#identity")
    identity.get_by_label("Display name").fill("Ann Smith, Acme")
    identity.get_by_label("Signature").fill('<p>Ann Smith<br><b>Acme Ltd</b></p><script>alert(1)</script>')
    identity.get_by_role("button", name="Save identity").click()
    expect(page.locator("#messages")).to_contain_text("Identity saved")
    expect(page.locator("#identity .signature-source")).to_contain_text("<b>Acme Ltd</b>")
    expect(page.locator("#identity .signature-source")).not_to_contain_text("script")

    # an alias and a forwarding rule, so the page shows its lists
    aliases = page.locator("#aliases")
    aliases.get_by_label("Alias address").fill("sales@acme.test")
    aliases.get_by_role("button", name="Add alias").click()
    expect(aliases.get_by_role("list", name="Aliases")).to_contain_text("sales@acme.test")
    forwarding = page.locator("#forwarding")
    forwarding.get_by_label("Forward to").fill("ann@home.example")
    forwarding.get_by_role("button", name="Add forwarding").click()
    expect(forwarding).to_contain_text("Waiting for confirmation")

    # renew
    before = created.expires_at
    page.get_by_role("button", name="Renew for a month").click()
    expect(page.locator("#messages")).to_contain_text("renewed until")
    created.refresh_from_db()
    assert (created.expires_at - before).days == 30
    shot("mailbox-detail-edited")

    page.set_viewport_size(PHONE)
    shot("mailbox-detail-phone")
    page.goto(f"{live_server.url}/portal/mailboxes/")
    shot("mailboxes-phone")
    page.goto(f"{live_server.url}/portal/mailboxes/new/")
    shot("mailbox-new-phone")
    page.set_viewport_size(DESKTOP)

    page.goto(f"{live_server.url}/portal/mailboxes/")
    expect(page.get_by_role("link", name="ann@acme.test", exact=True)).to_be_visible()
    shot("mailboxes")

    # the filters swap the table in place and keep the address bar in step
    page.get_by_label("Status").select_option(label="Expired")
    expect(page.get_by_role("heading", name="No mailboxes match these filters")).to_be_visible()
    expect(page.locator("#mailboxes-count")).to_have_text("0 matching mailboxes")
    assert page.url.endswith("/portal/mailboxes/?q=&status=expired&client=&domain=")
    page.get_by_label("Client").select_option(label="Acme Ltd")
    page.get_by_label("Status").select_option(label="Active")
    expect(page.locator("#mailboxes-count")).to_have_text("1 matching mailbox")
    shot("mailboxes-filtered")
    page.get_by_label("Address").fill("acme.test")  # part of the address: a domain finds its mailboxes
    expect(page).to_have_url(re.compile(r"\?q=acme\.test&status=active"))
    expect(page.get_by_role("link", name="ann@acme.test", exact=True)).to_be_visible()
    page.get_by_label("Address").fill("nobody.test")
    expect(page.locator("#mailboxes-count")).to_have_text("0 matching mailboxes")
    page.get_by_label("Address").fill("")
    expect(page.locator("#mailboxes-count")).to_have_text("1 matching mailbox")
    page.get_by_role("link", name="ann@acme.test", exact=True).click()

    # delete, confirmed in the dialog hx-confirm opens
    dialogs = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.get_by_role("link", name="Delete mailbox").click()
    page.wait_for_url(f"{live_server.url}/portal/mailboxes/")
    assert dialogs and dialogs[0].startswith("Delete the mailbox ann@acme.test?")
    expect(page.locator("#messages")).to_contain_text("Mailbox ann@acme.test deleted")
    assert PartnerMailbox.objects.count() == 0
    shot("mailboxes-after-delete")


def test_the_delete_confirmation_works_without_javascript(plans, browser, live_server):
    user, partner, domain = partner_with_a_verified_domain()
    created = partner_mailbox_open(partner=partner, domain=domain, local_part="bea", password="a-long-password",
                                     plan_id="pro")
    context = browser.new_context(java_script_enabled=False, viewport=DESKTOP)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    page.goto(f"{live_server.url}/portal/mailboxes/{created.pk}/")
    page.get_by_role("link", name="Delete mailbox").click()
    expect(page.get_by_role("heading", name="Delete this mailbox?")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "mailbox-delete-confirm.png"), full_page=True)
    page.get_by_role("button", name="Delete mailbox").click()
    expect(page.locator("#messages")).to_contain_text("Mailbox bea@acme.test deleted")
    assert PartnerMailbox.objects.count() == 0
    context.close()
