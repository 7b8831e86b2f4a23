"""/v1/hosting/webmail: the brand and the custom hostname, over a session only (API keys get 401),
403 for a hosting account that is not in trial or active, 422 naming the field; and
/internal/tls/allowed, Caddy's certificate ask."""
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from mailcore.apikeys.scopes import PARTNER_SCOPES, USER_SCOPES
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from webmail.models import WebmailBrand, WebmailHostname
from webmail import hostnames
from testkit.clients import new_key
from testkit.factories import PASSWORD, UserFactory
from testkit.https_files import https_files

pytestmark = pytest.mark.django_db
BRANDING = "/v1/hosting/webmail/branding"
LOGO = "/v1/hosting/webmail/branding/logo"
DOMAIN = "/v1/hosting/webmail/domain"
CHECK = "/v1/hosting/webmail/domain/check"
WEBMAIL = "webmail.mailwell.test"


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    """Each process keeps the served names for a second; a test starts from none (its database is new)."""
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


def png(width=48, height=48) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (20, 90, 200)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def session(api, alice, partner):
    """A Bearer session token from POST /auth/login, as a partner's own tooling would use."""
    token = api.post("/auth/login", {"email": alice.email, "password": PASSWORD}, format="json").json()["token"]
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return api


@pytest.fixture
def zone(dns_zone, settings):
    settings.WEBMAIL_HOST = WEBMAIL
    dns_zone.set(WEBMAIL, "A", "203.0.113.10")
    return dns_zone


# who may call


@pytest.mark.parametrize("method, path", [("get", BRANDING), ("patch", BRANDING), ("put", LOGO), ("delete", LOGO),
                                          ("get", DOMAIN), ("put", DOMAIN), ("delete", DOMAIN), ("post", CHECK)])
def test_an_api_key_is_refused_even_with_every_scope(api, alice, partner, method, path):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=sorted(USER_SCOPES | PARTNER_SCOPES)))
    response = getattr(api, method)(path, {}, format="json")
    assert response.status_code == 401
    assert "needs a session, not an API key" in response.json()["detail"]


def test_no_credentials_is_401(api, partner):
    assert api.get(BRANDING).status_code == 401


def test_the_portal_cookie_works_too(alice_api, partner):
    assert alice_api.get(BRANDING).status_code == 200


def test_an_account_that_is_not_a_partner_is_403(charlie_api):
    response = charlie_api.get(BRANDING)
    assert response.status_code == 403 and "not a hosting partner" in response.json()["detail"]


@pytest.mark.parametrize("status, why", [
    ("pending", "still pending approval"), ("expired", "has expired"), ("suspended", "is suspended"),
    ("rejected", "was declined"),
])
def test_saving_on_an_account_not_in_trial_or_active_is_403(session, alice, status, why):
    hosting_partner_enable(account=alice.account, status=status)
    for method, path, body in (("patch", BRANDING, {"brand_name": "Acme"}),
                               ("put", DOMAIN, {"hostname": "w.acme.test"}),
                               ("patch", BRANDING, {"primary": {"color": "not a colour"}})):  # 403 before 422
        response = getattr(session, method)(path, body, format="json")
        assert response.status_code == 403, (method, path)
        assert set(response.json()) == {"detail"} and why in response.json()["detail"]
    response = session.put(LOGO, png(), content_type="image/png")
    assert response.status_code == 403
    assert session.get(BRANDING).status_code == 200  # reading stays open
    assert not WebmailBrand.objects.exists() and not WebmailHostname.objects.exists()


def test_a_trial_account_may_save(session, alice):
    hosting_partner_enable(account=alice.account, status="trial")
    assert session.patch(BRANDING, {"brand_name": "Acme"}, format="json").status_code == 200


# branding


def test_the_brand_is_empty_until_saved(session):
    assert session.get(BRANDING).json() == {"brand_name": "", "primary": None, "secondary": None, "logo": None,
                                            "stylesheet_url": None, "updated_at": None}


def test_saving_name_and_colours_keeps_what_is_left_out(session):
    gradient = {"color": "#1D4ED8", "gradient_to": "#9333ea", "angle": 135}
    first = session.patch(BRANDING, {"brand_name": " Acme Mail ", "primary": gradient}, format="json")
    assert first.status_code == 200
    assert first.json()["brand_name"] == "Acme Mail"
    assert first.json()["primary"] == {"color": "#1d4ed8", "gradient_to": "#9333ea", "angle": 135,
                                       "css": "linear-gradient(135deg, #1d4ed8, #9333ea)"}
    second = session.patch(BRANDING, {"secondary": {"color": "#f59e0b"}}, format="json").json()
    assert second["brand_name"] == "Acme Mail" and second["primary"]["color"] == "#1d4ed8"
    assert second["secondary"] == {"color": "#f59e0b", "gradient_to": None, "angle": 90, "css": "#f59e0b"}
    cleared = session.patch(BRANDING, {"primary": None}, format="json").json()
    assert cleared["primary"] is None and cleared["secondary"]["color"] == "#f59e0b"


@pytest.mark.parametrize("body, field", [
    ({"primary": {"color": "red"}}, "primary.color"),
    ({"primary": {"color": "#123456; background: url(x)"}}, "primary.color"),
    ({"primary": {"color": "#123456", "gradient_to": "linear-gradient(red, blue)"}}, "primary.gradient_to"),
    ({"secondary": {"color": "#123456", "angle": 400}}, "secondary.angle"),
    ({"secondary": {"color": "#123456", "angle": "90"}}, "secondary.angle"),
    ({"primary": "#123456"}, "primary"),
    ({"primary": {}}, "primary.color"),
    ({"brand_name": "x" * 81}, "brand_name"),
    ({"brand_name": 12}, "brand_name"),
    ({"logo_url": "http://example.test/logo.png"}, "logo_url"),
    ({"logo_url": "https://10.0.0.1/logo.png"}, "logo_url"),
])
def test_bad_fields_are_422_naming_the_field_and_change_nothing(session, body, field):
    response = session.patch(BRANDING, body, format="json")
    assert response.status_code == 422, response.json()
    assert field in response.json()["detail"]
    assert not WebmailBrand.objects.exists()


def test_a_logo_url_is_fetched_once_and_re_encoded(session, settings, tmp_path):
    with https_files(tmp_path) as files:
        settings.WEBHOOK_ALLOW_PRIVATE, settings.WEBHOOK_CA_BUNDLE = True, files.ca_path
        url = files.put("/logo.png", png(800, 400))
        response = session.patch(BRANDING, {"logo_url": url}, format="json")
        assert response.status_code == 200
        logo = response.json()["logo"]
        assert logo["source_url"] == url and logo["content_type"] in {"image/png", "image/webp"}
        assert logo["url"] is None  # no verified hostname serves it yet
        assert len(files.hits) == 1
        redirected = files.put("/r", status=301, Location="https://127.0.0.1/")
        refused = session.patch(BRANDING, {"logo_url": redirected, "brand_name": "New"}, format="json")
        assert refused.status_code == 422 and "redirect" in refused.json()["errors"]["logo_url"][0]
    assert session.get(BRANDING).json()["brand_name"] == ""  # nothing of the refused save was kept


def test_a_logo_upload_as_the_body_or_a_form(session):
    raw = session.put(LOGO, png(), content_type="image/png")
    assert raw.status_code == 200 and raw.json()["logo"]["content_type"] in {"image/png", "image/webp"}
    form = session.put(LOGO, {"file": SimpleUploadedFile("logo.png", png(30, 30), "image/png")}, format="multipart")
    assert form.status_code == 200
    with Image.open(io.BytesIO(bytes(WebmailBrand.objects.get().logo))) as stored:
        assert stored.size == (30, 30)
    removed = session.delete(LOGO)
    assert removed.status_code == 200 and removed.json()["logo"] is None


@pytest.mark.parametrize("body, content_type, message", [
    (b"<svg onload='alert(1)'/>", "image/png", "not a PNG, JPEG, GIF or WebP"),
    (b"", "image/png", "Send the image"),
    (b"\x89PNG" + b"\x00" * (2 * 1024 * 1024 + 70_000), "image/png", "larger than 2 MB"),
])
def test_a_hostile_upload_is_422(session, body, content_type, message):
    response = session.put(LOGO, body, content_type=content_type)
    assert response.status_code == 422 and message in response.json()["errors"]["file"][0]
    assert not WebmailBrand.objects.exists()


def test_an_upload_without_a_file_is_422(session):
    response = session.put(LOGO, {}, format="multipart")
    assert response.status_code == 422 and "file" in response.json()["errors"]


# the hostname


def test_claiming_checking_and_removing_the_hostname(session, zone):
    assert session.get(DOMAIN).status_code == 404
    claimed = session.put(DOMAIN, {"hostname": "Webmail.Acme.test."}, format="json")
    assert claimed.status_code == 201
    record = claimed.json()
    assert record["hostname"] == "webmail.acme.test" and record["status"] == "pending"
    assert record["dns_record"] == {"type": "CNAME", "host": "webmail.acme.test", "value": WEBMAIL}
    assert record["webmail_url"] == "https://webmail.acme.test/" and record["problem"] is None
    again = session.put(DOMAIN, {"hostname": "webmail.acme.test"}, format="json")
    assert again.status_code == 200
    checked = session.post(CHECK).json()
    assert checked["status"] == "pending" and "does not exist in DNS yet" in checked["problem"]
    zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    checked = session.post(CHECK).json()
    assert checked["status"] == "verified" and checked["problem"] is None and checked["verified_at"]
    brand = session.patch(BRANDING, {"brand_name": "Acme"}, format="json").json()
    assert brand["stylesheet_url"].startswith("https://webmail.acme.test/brand/")
    assert session.delete(DOMAIN).status_code == 204
    assert session.get(DOMAIN).status_code == 404 and session.delete(DOMAIN).status_code == 404


@pytest.mark.parametrize("body, message", [
    ({"hostname": "not a host"}, "hostname"),
    ({"hostname": WEBMAIL}, "one of our own names"),
    ({"hostname": ""}, "hostname"),
    ({"hostname": 5}, "must be a string"),
    ({}, "hostname"),
])
def test_a_bad_hostname_is_422(session, body, message):
    response = session.put(DOMAIN, body, format="json")
    assert response.status_code == 422 and message in response.json()["detail"]
    assert not WebmailHostname.objects.exists()


def test_a_hostname_held_by_another_account_is_409(session, db):
    user = UserFactory(email="dora@example.test", account__plan_code="premium")
    other = hosting_partner_enable(account=user.account, status="active")
    WebmailHostname.objects.create(partner=other, hostname="webmail.acme.test", next_check_at="2030-01-01T00:00Z")
    response = session.put(DOMAIN, {"hostname": "webmail.acme.test"}, format="json")
    assert response.status_code == 409 and "already claimed" in response.json()["detail"]


def test_removing_is_allowed_whatever_the_status(session, alice, zone):
    session.put(DOMAIN, {"hostname": "webmail.acme.test"}, format="json")
    hosting_partner_enable(account=alice.account, status="expired")
    assert session.delete(DOMAIN).status_code == 204


# the certificate ask


def test_the_tls_ask_answers_200_only_for_verified_hostnames_and_our_own(client, session, zone,
                                                                       django_capture_on_commit_callbacks):
    session.put(DOMAIN, {"hostname": "webmail.acme.test"}, format="json")
    assert client.get("/internal/tls/allowed", {"domain": "webmail.acme.test"}).status_code == 404
    zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    with django_capture_on_commit_callbacks(execute=True):  # the cache is invalidated once the check commits
        session.post(CHECK)
    allowed = client.get("/internal/tls/allowed", {"domain": "webmail.acme.test"})
    assert allowed.status_code == 200 and allowed.json() == {"domain": "webmail.acme.test", "allowed": True}
    assert client.get("/internal/tls/allowed", {"domain": WEBMAIL}).status_code == 200
    for name in ("other.acme.test", "", "WEBMAIL.ACME.TEST.evil.test"):
        refused = client.get("/internal/tls/allowed", {"domain": name})
        assert refused.status_code == 404 and set(refused.json()) == {"detail"}
    assert client.get("/internal/tls/allowed").status_code == 404
    assert client.post("/internal/tls/allowed", {"domain": WEBMAIL}).status_code == 405


def test_the_tls_ask_is_not_in_the_public_schema(api):
    paths = api.get("/openapi.json").json()["paths"]
    assert "/internal/tls/allowed" not in paths
    assert {"/v1/hosting/webmail/branding", "/v1/hosting/webmail/branding/logo", "/v1/hosting/webmail/domain",
            "/v1/hosting/webmail/domain/check"} <= set(paths)
    assert paths["/v1/hosting/webmail/branding"]["patch"]["security"] == [{"SessionToken": []}, {"PortalCookie": []}]


def test_the_specs_colour_names_are_a_shorthand_for_plain_colours(session):
    saved = session.patch("/v1/hosting/webmail/branding", {"primary_color": "#AA3300", "secondary_color": "#00aa55"},
                          format="json")
    assert saved.status_code == 200
    assert saved.json()["primary"]["color"] == "#aa3300" and saved.json()["secondary"]["color"] == "#00aa55"

    bad = session.patch("/v1/hosting/webmail/branding", {"primary_color": "red"}, format="json")
    both = session.patch("/v1/hosting/webmail/branding", {"primary_color": "#112233", "primary": {"color": "#445566"}},
                         format="json")
    assert bad.status_code == 422 and "primary_color" in bad.json()["errors"]
    assert both.status_code == 422 and "primary_color" in both.json()["errors"]
    assert WebmailBrand.objects.get().primary_color == "#aa3300"
