"""The partner portal's webmail branding page: the brand form with its server-rendered preview (htmx
and without JavaScript), logo upload and removal, the custom hostname card checked against a real
DNS server, and who may open it."""
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from webmail.models import WebmailBrand, WebmailHostname
from webmail import hostnames
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db
PAGE = "/portal/branding/"
PREVIEW = "/portal/branding/preview/"
HOSTNAME = "/portal/branding/hostname/"
CHECK = "/portal/branding/hostname/check/"
REMOVE = "/portal/branding/hostname/remove/"
LOGO = "/portal/branding/logo/"
HTMX = {"HTTP_HX_REQUEST": "true"}
WEBMAIL = "webmail.mailwell.test"


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    """Each process keeps the served names for a second; a test starts from none (its database is new)."""
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


def png(width=60, height=30, color=(10, 20, 200)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


def brand_post(**changes) -> dict:
    data = {"brand_name": "Acme Mail", "primary_mode": "gradient", "primary_color": "#0f766e",
            "primary_gradient_to": "#134e4a", "primary_angle": "135", "secondary_mode": "solid",
            "secondary_color": "#fef3c7", "secondary_gradient_to": "#000000", "secondary_angle": "90"}
    data.update(changes)
    return {name: value for name, value in data.items() if value is not None}


def html(response) -> str:
    return response.content.decode()


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def zone(dns_zone, settings):
    settings.WEBMAIL_HOST = WEBMAIL
    dns_zone.set(WEBMAIL, "A", "203.0.113.10")
    return dns_zone


# who sees the page


def test_the_page_is_in_the_partner_navigation(alice_client):
    page = html(alice_client.get("/"))
    assert f'href="{PAGE}"' in page and "Webmail branding" in page


@pytest.mark.parametrize("status", ["pending", "expired", "suspended", "rejected"])
def test_an_account_not_in_trial_or_active_gets_the_partner_page_and_saves_nothing(client, alice, status):
    hosting_partner_enable(account=alice.account, status=status)
    client.force_login(alice)
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, brand_post()).status_code == 403
    assert client.post(HOSTNAME, {"hostname": "webmail.acme.test"}).status_code == 403
    assert not WebmailBrand.objects.exists() and not WebmailHostname.objects.exists()


def test_someone_signed_out_is_sent_to_sign_in(client):
    assert client.get(PAGE)["Location"].startswith("/accounts/login/")


def test_another_partner_never_sees_alices_brand_or_logo(alice_client, client, db):
    alice_client.post(PAGE, brand_post(logo=SimpleUploadedFile("l.png", png(), "image/png")))
    user = UserFactory(email="dora@example.test", account__plan_code="premium")
    hosting_partner_enable(account=user.account, status="active")
    client.force_login(user)
    assert "Acme Mail" not in html(client.get(PAGE))
    assert client.get(LOGO).status_code == 404


# the brand


def test_the_empty_page_shows_defaults_and_the_preview(alice_client):
    page = html(alice_client.get(PAGE))
    assert 'id="brand-preview"' in page and "Sign in to your mailbox" in page
    assert 'href="/static/css/branding.css"' in page
    assert 'enctype="multipart/form-data"' in page and f'hx-post="{PREVIEW}"' in page
    assert 'name="primary_mode" value="default"' in page


def test_saving_without_javascript_stores_the_brand_and_shows_it(alice_client):
    response = alice_client.post(PAGE, brand_post(logo=SimpleUploadedFile("logo.png", png(900, 300), "image/png")))
    assert response.status_code == 302 and response["Location"] == PAGE
    brand = WebmailBrand.objects.get()
    assert (brand.brand_name, brand.primary_color, brand.primary_gradient_to, brand.primary_gradient_angle) == (
        "Acme Mail", "#0f766e", "#134e4a", 135)
    assert (brand.secondary_color, brand.secondary_gradient_to) == ("#fef3c7", "")
    page = html(alice_client.get(PAGE))
    assert "Brand saved." in page
    assert "--preview-fill: linear-gradient(135deg, #0f766e, #134e4a)" in page
    logo_src = re.search(r'class="brand-preview__logo" src="([^"]+)"', page).group(1)
    logo = alice_client.get(logo_src)
    assert logo.status_code == 200 and logo["X-Content-Type-Options"] == "nosniff"
    with Image.open(io.BytesIO(logo.content)) as stored:
        assert stored.size == (512, 171)
    assert re.search(r'value="gradient" id="id_primary_mode_2"[^>]* checked', page)


def test_the_preview_button_shows_the_brand_without_saving(alice_client):
    response = alice_client.post(PAGE, brand_post(action="preview", brand_name="Trying"))
    assert response.status_code == 200 and ">Trying</span>" in html(response)
    assert not WebmailBrand.objects.exists()


def test_the_live_preview_follows_the_fields_and_embeds_a_new_logo(alice_client):
    response = alice_client.post(PREVIEW, brand_post(brand_name="Live", logo=SimpleUploadedFile(
        "l.png", png(), "image/png")), **HTMX)
    fragment = html(response).strip()
    assert response.status_code == 200 and fragment.startswith('<div id="brand-preview"')
    assert ">Live</span>" in fragment and "--preview-accent: #fef3c7" in fragment
    assert 'src="data:image/' in fragment  # re-encoded by Pillow, shown before it is saved
    assert not WebmailBrand.objects.exists()


def test_the_preview_says_why_a_bad_logo_is_not_shown(alice_client):
    fragment = html(alice_client.post(PREVIEW, brand_post(logo=SimpleUploadedFile("x.png", b"<svg/>", "image/png")),
                                      **HTMX))
    assert "not a PNG, JPEG, GIF or WebP" in fragment


@pytest.mark.parametrize("changes, field, message", [
    ({"primary_color": "red"}, "primary_color", "#rrggbb"),
    ({"primary_gradient_to": "url(x)"}, "primary_gradient_to", "#rrggbb"),
    ({"primary_angle": "400"}, "primary_angle", "less than or equal to 360"),
    ({"logo": SimpleUploadedFile("x.png", b"MZ\x90\x00 not an image", "image/png")}, "logo", "not a PNG"),
    ({"logo_url": "http://example.test/l.png"}, "logo_url", "must use https"),
    ({"brand_name": "x" * 81}, "brand_name", "at most 80"),
])
def test_bad_input_is_shown_next_to_its_field_and_saves_nothing(alice_client, changes, field, message):
    response = alice_client.post(PAGE, brand_post(**changes))
    assert response.status_code == 422
    assert message in html(response)
    marked = rf'id="id_{field}"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*id="id_{field}"'
    assert re.search(marked, html(response))
    assert not WebmailBrand.objects.exists()


def test_default_colours_and_removing_the_logo(alice_client):
    alice_client.post(PAGE, brand_post(logo=SimpleUploadedFile("l.png", png(), "image/png")))
    alice_client.post(PAGE, brand_post(primary_mode="default", secondary_mode="default", remove_logo="on"))
    brand = WebmailBrand.objects.get()
    assert (brand.primary_color, brand.secondary_color, brand.logo, brand.logo_content_type) == ("", "", None, "")
    assert alice_client.get(LOGO).status_code == 404


# the hostname


def test_claiming_a_hostname_shows_the_cname_to_create(alice_client, zone):
    response = alice_client.post(HOSTNAME, {"hostname": "Webmail.Acme.Test"})
    assert response.status_code == 302
    page = html(alice_client.get(PAGE))
    assert 'value="webmail.acme.test"' in page and f'value="{WEBMAIL}"' in page and "CNAME" in page
    assert "Waiting for DNS" in page and "the first check runs within a minute" in page
    assert "Check now" in page


def test_check_now_shows_the_reason_then_verifies(alice_client, zone):
    alice_client.post(HOSTNAME, {"hostname": "webmail.acme.test"})
    card = html(alice_client.post(CHECK, **HTMX))
    assert card.startswith('<section id="hostname-card"')
    assert "does not exist in DNS yet: create a CNAME record for it pointing to webmail.mailwell.test." in card
    assert "not verified yet." in card
    zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    card = html(alice_client.post(CHECK, **HTMX))
    assert "Verified" in card and "is verified; your customers can sign in there now." in card
    assert 'href="https://webmail.acme.test/"' in card


def test_check_now_without_javascript_redirects_with_the_outcome(alice_client, zone):
    alice_client.post(HOSTNAME, {"hostname": "webmail.acme.test"})
    response = alice_client.post(CHECK)
    assert response.status_code == 302
    assert "is not verified yet: webmail.acme.test does not exist" in html(alice_client.get(PAGE))


@pytest.mark.parametrize("name, message", [("webmail.mailwell.test", "one of our own names"),
                                           ("not a host", "is not a hostname"), ("", "This field is required")])
def test_a_bad_hostname_is_explained(alice_client, zone, name, message):
    response = alice_client.post(HOSTNAME, {"hostname": name})
    assert response.status_code == 422 and message in html(response)
    htmx = alice_client.post(HOSTNAME, {"hostname": name}, **HTMX)
    assert htmx.status_code == 200 and message in html(htmx) and html(htmx).startswith('<section id="hostname-card"')
    assert not WebmailHostname.objects.exists()


def test_removing_the_hostname_asks_first_without_javascript(alice_client, zone):
    alice_client.post(HOSTNAME, {"hostname": "webmail.acme.test"})
    confirm = alice_client.get(REMOVE)
    assert confirm.status_code == 200 and "Remove webmail.acme.test?" in html(confirm)
    assert alice_client.post(REMOVE).status_code == 302
    assert not WebmailHostname.objects.exists()
    assert alice_client.post(REMOVE).status_code == 404
