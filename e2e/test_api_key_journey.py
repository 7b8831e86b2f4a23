"""A partner creates an API key (after a first inline error), copies it from the one page that shows
it, calls the API with it, sees the request in the usage chart, revokes it, and changes the default
lapse action."""
import pytest
from playwright.sync_api import expect

from mailcore.partners.services import hosting_partner_enable
from mailcore.apikeys.models import ApiKey
from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def test_a_partner_creates_uses_and_revokes_an_api_key_and_sets_the_lapse_action(plans, page, live_server, log_in,
                                                                                   screenshot):
    user = UserFactory(email="keys@example.test", account__plan_code="premium", account__name="Northwind Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    log_in(user.email, PASSWORD)

    def shot(name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")  # a full-page shot taken scrolled draws the sticky bar mid-page
        screenshot(name)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="No API keys yet")).to_be_visible()
    shot("settings-empty")

    page.get_by_role("link", name="Create your first key").click()
    expect(page.get_by_role("heading", level=1, name="New API key")).to_be_visible()
    expect(page.get_by_role("checkbox", name="send Send mail with POST /mail/send")).to_be_checked()
    shot("api-key-new")

    # an invalid address: the error is shown next to its field and no key is made
    page.get_by_label("Name").fill("Billing sync")
    page.get_by_role("checkbox", name="partner:stats:read").check()
    page.get_by_label("Expires").select_option(label="In 90 days")
    page.get_by_label("Allowed IP addresses").fill("127.0.0.1\nnot-an-address")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#id_allowed_ips_error")).to_contain_text("'not-an-address' is not an IP address or CIDR")
    expect(page.get_by_label("Allowed IP addresses")).to_be_focused()
    expect(page.get_by_role("checkbox", name="partner:stats:read")).to_be_checked()
    assert ApiKey.objects.count() == 0
    shot("api-key-new-error")

    page.get_by_label("Allowed IP addresses").fill("127.0.0.1")
    page.get_by_role("button", name="Create key").click()
    copy_field = page.get_by_label("API key", exact=True)
    expect(copy_field).to_be_visible()
    raw = copy_field.input_value()
    key = ApiKey.objects.get()
    assert raw.startswith(key.key_prefix)
    assert key.scopes == ["send", "partner:stats:read"] and key.allowed_ips == ["127.0.0.1/32"]
    expect(page.locator("#messages")).to_contain_text("Copy it now")
    shot("api-key-created")

    # the key works
    answer = page.request.get(f"{live_server.url}/subscriptions/me", headers={"X-API-Key": raw})
    assert answer.status == 200
    assert answer.json()["plan"] == "premium"

    # the list never shows it again
    page.get_by_role("link", name="I've copied it").click()
    expect(page.get_by_role("link", name="Billing sync", exact=True)).to_be_visible()
    assert raw not in page.content()
    shot("settings")

    page.get_by_role("link", name="Billing sync", exact=True).click()
    expect(page.get_by_role("heading", level=1, name="Billing sync")).to_be_visible()
    expect(page.locator(".usage-totals")).to_contain_text("Today1")
    assert page.locator(".chart__bar").count() == 30
    shot("api-key-detail")
    page.set_viewport_size(PHONE)
    shot("api-key-detail-phone")
    page.goto(f"{live_server.url}/portal/settings/")
    shot("settings-phone")
    page.goto(f"{live_server.url}/portal/settings/api-keys/new/")
    shot("api-key-new-phone")
    page.set_viewport_size(DESKTOP)

    # revoke, confirmed in the dialog hx-confirm opens
    page.goto(f"{live_server.url}/portal/settings/api-keys/{key.pk}/")
    dialogs = []
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.get_by_role("link", name="Revoke key").click()
    page.wait_for_url(f"{live_server.url}/portal/settings/#api-keys")
    assert dialogs and dialogs[0].startswith("Revoke the API key “Billing sync”?")
    expect(page.locator("#messages")).to_contain_text("API key “Billing sync” revoked")
    expect(page.get_by_role("row", name="Billing sync")).to_contain_text("Revoked")
    assert page.request.get(f"{live_server.url}/subscriptions/me", headers={"X-API-Key": raw}).status == 401

    # the default lapse action
    lapse = page.locator("#lapse-action")
    expect(lapse.get_by_role("radio", name="Suspend")).to_be_checked()
    lapse.get_by_role("radio", name="Downgrade to Free").check()
    lapse.get_by_role("button", name="Save").click()
    expect(page.locator("#messages")).to_contain_text("Lapsed mailboxes now follow “Downgrade to Free”")
    partner.refresh_from_db()
    assert partner.default_client_lapse_action == "downgrade_free"
    shot("settings-after")
