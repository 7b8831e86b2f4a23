"""A hosting partner brands its webmail (the live preview follows the fields, a logo upload shows
before saving), claims its own hostname and sees it verified once the CNAME is in a loopback DNS
server; then a client's mailbox owner opens that hostname (Chromium resolves it to the live server)
and signs in on the partner's branded page, on a desktop and on a phone."""
import io
import re

import pytest
from django.conf import settings
from PIL import Image
from playwright.sync_api import expect

from billing.services.mailboxes import partner_mailbox_open
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from webmail import hostnames
from testkit.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
HOST = "webmail.acme.test"
WEBMAIL = "webmail.mailwell.test"
PHONE = {"width": 390, "height": 844}
MAILBOX_PASSWORD = "correct-horse-battery"


def logo_png() -> bytes:
    image = Image.new("RGBA", (240, 80), (0, 0, 0, 0))
    for x in range(240):
        for y in range(20, 60):
            image.putpixel((x, y), (245, 158, 11, 255) if x < 80 else (15, 118, 110, 255))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def shot(page, screenshot):
    def take(name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(name)

    return take


def wait_for_preview(page) -> None:
    expect(page.locator("#brand-preview")).not_to_have_class(re.compile("htmx-(swapping|settling)"))


def test_a_partner_brands_its_webmail_and_a_customer_signs_in_there(plans, page, live_server, log_in, shot, dns_zone,
                                                                     browser_type, browser_type_launch_args,
                                                                     monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "WEBMAIL_HOST", WEBMAIL)
    hostnames._forget_locally()
    user = UserFactory(email="partner@example.test", account__plan_code="premium", account__name="Acme Hosting")
    partner = hosting_partner_enable(account=user.account, status="active")
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name="bakery.test"))
    slots_grant(partner=partner, count=1)
    partner_mailbox_open(partner=partner, domain=domain, local_part="ann", password=MAILBOX_PASSWORD, plan_id="pro")
    log_in(user.email, PASSWORD)

    # The branding page, with the preview in the platform's defaults.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Webmail branding").click()
    expect(page.get_by_role("heading", name="Webmail branding", level=1)).to_be_visible()
    page.wait_for_load_state("load")  # htmx binds the form on DOMContentLoaded: typing earlier posts nothing
    preview = page.locator("#brand-preview")
    expect(preview.get_by_text("Sign in to your mailbox")).to_be_visible()

    # The preview follows the fields as they change; nothing is saved yet.
    with page.expect_response(re.compile(r"/portal/branding/preview/$")):
        page.get_by_label("Brand name").fill("Acme Mail")
    wait_for_preview(page)
    expect(preview.locator(".brand-preview__name").first).to_have_text("Acme Mail")
    page.get_by_role("group", name="Main colour: top bar and buttons").get_by_label("A gradient").check()
    with page.expect_response(re.compile(r"/portal/branding/preview/$")):
        page.locator("#id_primary_color").fill("#0f766e")
    with page.expect_response(re.compile(r"/portal/branding/preview/$")):
        page.locator("#id_primary_gradient_to").fill("#134e4a")
    wait_for_preview(page)
    gradient = re.compile(r"--preview-fill: linear-gradient\(90deg, #0f766e, #134e4a\)")
    expect(preview).to_have_attribute("style", gradient)
    accent = page.get_by_role("group", name="Accent colour: sign-in background and highlights")
    accent.get_by_label("One colour").check()
    with page.expect_response(re.compile(r"/portal/branding/preview/$")):
        page.locator("#id_secondary_color").fill("#fef3c7")
    logo = tmp_path / "acme-logo.png"
    logo.write_bytes(logo_png())
    with page.expect_response(re.compile(r"/portal/branding/preview/$")):
        page.get_by_label("Logo image").set_input_files(str(logo))
    wait_for_preview(page)
    expect(preview.locator("img.brand-preview__logo").first).to_have_attribute("src", re.compile("^data:image/"))
    shot("webmail-branding-preview")

    page.get_by_role("button", name="Save brand").click()
    expect(page.get_by_text("Brand saved.")).to_be_visible()
    saved_logo = re.compile("^/portal/branding/logo/")
    expect(preview.locator("img.brand-preview__logo").first).to_have_attribute("src", saved_logo)

    # The hostname: the CNAME to create, the reason while DNS is not there, then verified.
    page.get_by_role("textbox", name="Webmail hostname").fill("Webmail.Acme.Test")
    page.get_by_role("button", name="Save hostname").click()
    card = page.locator("#hostname-card")
    expect(card.get_by_text("Waiting for DNS")).to_be_visible()
    expect(card.get_by_label("Value (points to)")).to_have_value(WEBMAIL)
    with page.expect_response(re.compile(r"/hostname/check/$")):
        card.get_by_role("button", name="Check now").click()
    expect(card.get_by_text("does not exist in DNS yet")).to_be_visible()
    shot("webmail-branding-hostname-pending")
    dns_zone.set(HOST, "CNAME", WEBMAIL)
    with page.expect_response(re.compile(r"/hostname/check/$")):
        card.get_by_role("button", name="Check now").click()
    expect(card.get_by_text("is verified; your customers can sign in there now.")).to_be_visible()
    shot("webmail-branding-hostname-verified")
    page.set_viewport_size(PHONE)
    shot("webmail-branding-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    # A customer opens the partner's hostname: Chromium resolves it to the live server.
    port = live_server.url.rsplit(":", 1)[1]
    args = [*browser_type_launch_args.get("args", []), f"--host-resolver-rules=MAP {HOST} 127.0.0.1"]
    browser = browser_type.launch(**{**browser_type_launch_args, "args": args})
    try:
        for label, viewport in (("desktop", {"width": 1280, "height": 860}), ("phone", PHONE)):
            customer = browser.new_page(viewport=viewport)
            errors = []
            customer.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            customer.goto(f"http://{HOST}:{port}/")
            expect(customer).to_have_title("Sign in · Acme Mail")
            expect(customer.locator(".topbar .brand")).to_contain_text("Acme Mail")
            expect(customer.locator("img.brand__logo")).to_be_visible()
            topbar = customer.locator(".topbar").evaluate("element => getComputedStyle(element).backgroundImage")
            assert "rgb(15, 118, 110)" in topbar and "rgb(19, 78, 74)" in topbar
            background = customer.evaluate("getComputedStyle(document.body).backgroundColor")
            assert background == "rgb(254, 243, 199)"
            assert "Mailwell" not in customer.content()
            customer.evaluate("window.scrollTo(0, 0)")
            customer.screenshot(path=str(page_screenshot_path(f"webmail-branded-sign-in-{label}")), full_page=True)
            customer.get_by_label("Email address").fill("ann@bakery.test")
            customer.get_by_label("Password").fill(MAILBOX_PASSWORD)
            customer.get_by_role("button", name="Sign in").click()
            customer.wait_for_url(f"http://{HOST}:{port}/inbox/")
            expect(customer.locator(".topbar .brand")).to_contain_text("Acme Mail")
            customer.screenshot(path=str(page_screenshot_path(f"webmail-branded-inbox-{label}")), full_page=True)
            assert not [error for error in errors if "Content Security Policy" in error], errors
            customer.close()
    finally:
        browser.close()


def page_screenshot_path(name: str):
    from e2e.conftest import SCREENSHOTS

    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS / f"{name}.png"
