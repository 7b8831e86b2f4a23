"""A hosting partner adds a client's domain, follows the DNS wizard until the domain is verified
(the records published on a loopback DNS server, as the client's DNS provider would), then creates,
renames and configures a client. A stranger sees how to become a partner."""
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from mailcore.partners.services import hosting_partner_enable
from mailcore.domains.models import Domain
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.services import slots_grant
from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"


def check_dns(page) -> None:
    """Press Check DNS and wait until its answer is swapped in."""
    with page.expect_response(re.compile(r"/check/$")):
        page.get_by_role("button", name="Check DNS").click()
    expect(page.locator("#dns-records")).not_to_have_class(re.compile("htmx-(request|swapping|settling)"))
    expect(page.get_by_role("button", name="Check DNS")).to_be_enabled()


@pytest.fixture
def shot(page, screenshot):
    """A full-page screenshot from the top (a sticky top bar is drawn where the page was scrolled to)."""

    def take(name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(name)

    return take


def test_a_partner_sets_up_a_domain_and_a_client(plans, page, live_server, log_in, shot, dns_zone):
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    slots_grant(partner=partner, count=10)
    log_in(user.email, PASSWORD)

    # The domain list starts empty; a bad name is refused next to the field.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Domains").click()
    expect(page.get_by_role("heading", name="No domains yet")).to_be_visible()
    shot("partner-domains-empty")
    page.get_by_label("Domain name").fill("not a domain")
    page.get_by_role("button", name="Add domain").click()
    expect(page.get_by_text("is not a domain name")).to_be_visible()
    expect(page.get_by_label("Domain name")).to_be_focused()
    shot("partner-domain-add-error")

    # A good one opens its DNS wizard with the eight checked records.
    page.get_by_label("Domain name").fill("acme.test")
    page.get_by_role("button", name="Add domain").click()
    page.wait_for_url(re.compile(r"/portal/domains/\d+/$"))
    expect(page.get_by_role("heading", level=1, name="acme.test")).to_be_visible()
    expect(page.locator("#dns-records .dns-record")).to_have_count(8)
    expect(page.locator(".dns-record--optional")).to_have_count(9)  # mail-app set-up and the tracking host
    shot("partner-dns-wizard")

    # The client publishes the MX record only: Check DNS says what is still missing.
    mx = page.get_by_label("Value").first.input_value()
    dns_zone.set("acme.test", "MX", mx)
    check_dns(page)
    expect(page.locator("#dns-check-status")).to_contain_text("1 of 8 records right")
    expect(page.locator("#record-mx .badge--ok")).to_have_text(re.compile("Found"))
    expect(page.locator("#record-ownership")).to_contain_text("No verification TXT record.")
    shot("partner-dns-wizard-partial")
    page.locator("#record-spf").screenshot(path=str(SCREENSHOTS / "partner-dns-record-advice.png"))

    # Then everything else, with the values shown on the page; Check DNS until verified.
    named = ("dmarc", "dkim", "mta_sts", "mta_sts_host", "tlsrpt")
    value = {key: page.locator(f"#record-{key}-value").input_value() for key in ("ownership", "spf", *named)}
    host = {key: page.locator(f"#record-{key}-host").input_value() for key in named}
    dns_zone.set("acme.test", "TXT", value["ownership"], value["spf"])
    for key in named:
        dns_zone.set(f"{host[key]}.acme.test", "CNAME" if key == "mta_sts_host" else "TXT", value[key])
    for _ in range(5):
        check_dns(page)
        if "is verified" in page.locator("#dns-check-status").inner_text():
            break
        page.wait_for_timeout(500)
    expect(page.locator("#domain-status")).to_have_text(re.compile("Verified"))
    expect(page.locator(".dns-record--ok")).to_have_count(8)
    assert Domain.objects.get(name="acme.test").status == "verified"
    shot("partner-dns-wizard-verified")

    # Deleting asks first; the confirmation page works without JavaScript.
    page.goto(page.url + "delete/")
    expect(page.get_by_role("heading", name="Delete acme.test?")).to_be_visible()
    shot("partner-domain-delete-confirm")
    page.get_by_role("link", name="Cancel").click()

    # Clients: create one, open it, rename it, give it its own lapse action.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Clients").click()
    page.get_by_label("Client name").fill("Globex")
    page.get_by_role("button", name="Create client").click()
    expect(page.locator("#clients")).to_contain_text("Globex")
    expect(page.locator("#messages")).to_contain_text("Client Globex created.")
    shot("partner-clients")
    page.get_by_role("link", name="Globex", exact=True).click()
    expect(page.get_by_role("heading", level=1, name="Globex")).to_be_visible()
    page.get_by_label("Client name").fill("Globex Corporation")
    page.get_by_role("button", name="Rename").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Globex Corporation")
    page.get_by_label(re.compile("Downgrade to Free")).check()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#messages")).to_contain_text("downgraded to Free")
    expect(page.locator("#client-heading")).to_contain_text("At term end: Downgrade to Free")
    shot("partner-client")

    # The client named after the domain lists it.
    page.goto(f"{live_server.url}/portal/clients/")
    page.get_by_role("link", name="acme.test", exact=True).click()
    expect(page.locator(".domain-name")).to_have_text("acme.test")

    # Client mailboxes on the verified domain (their pages are another journey's), one term ending soon.
    acme = Domain.objects.get(name="acme.test")
    for local_part, plan_id in [("ann", "premium"), ("bob", "pro"), ("cy", "pro")]:
        partner_mailbox_open(partner=partner, domain=acme, local_part=local_part, password="correct-horse",
                               plan_id=plan_id)
    PartnerMailbox.objects.filter(mailbox__address="ann@acme.test").update(
        expires_at=timezone.now() + timedelta(days=4))

    # With mailboxes on it, the domain is not deleted: the refusal is explained in place.
    page.goto(f"{live_server.url}/portal/domains/{acme.pk}/")
    expect(page.locator("#domain-mailboxes")).to_contain_text("ann@acme.test")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("link", name="Delete domain").click()
    expect(page.locator("#domain-delete [role=alert]")).to_contain_text(
        "acme.test was not deleted: it still has mailboxes.")
    page.locator("#domain-delete").screenshot(path=str(SCREENSHOTS / "partner-domain-delete-refused.png"))
    assert Domain.objects.filter(pk=acme.pk).exists()

    # A second domain waits for its DNS: the dashboard lists it under what needs attention.
    page.goto(f"{live_server.url}/portal/domains/")
    page.get_by_label("Domain name").fill("initech.test")
    page.get_by_role("button", name="Add domain").click()
    page.wait_for_url(re.compile(r"/portal/domains/\d+/$"))
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Dashboard").click()
    expect(page.locator(".attention")).to_contain_text("initech.test")
    expect(page.locator(".attention")).to_contain_text("ann@acme.test")
    shot("partner-dashboard")

    page.set_viewport_size(PHONE)
    shot("partner-dashboard-phone")
    page.goto(f"{live_server.url}/portal/domains/{Domain.objects.get(name='initech.test').pk}/")
    shot("partner-dns-wizard-phone")
    page.locator("#record-dkim").screenshot(path=str(SCREENSHOTS / "partner-dns-record-phone.png"))
    page.goto(f"{live_server.url}/portal/domains/")
    shot("partner-domains-phone")


def test_a_stranger_is_shown_how_to_become_a_partner(plans, page, live_server, log_in, shot):
    user = UserFactory(email="stranger@example.test", account__plan_code="pro")
    log_in(user.email, PASSWORD)
    page.goto(f"{live_server.url}/portal/domains/")
    expect(page.get_by_role("heading", name="What partners get")).to_be_visible()
    shot("partner-become")
    page.get_by_role("button", name="Apply to become a partner").click()
    expect(page.get_by_role("heading", name="Your application is being reviewed")).to_be_visible()
    shot("partner-become-pending")
