"""The webmail on a partner's verified hostname: the Host header alone routes a request to the
webmail at / with the partner's brand (name, logo, colours); an unverified name is an unknown host;
only the mailboxes of that partner's clients sign in there, and the platform's own host is untouched."""
import io
import re

import pytest
from django.test import Client
from PIL import Image

from billing.services.mailboxes import partner_mailbox_open
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from webmail.branding import Fill, brand_update, logo_reencode
from webmail.hostnames import webmail_hostname_check, webmail_hostname_claim
from webmail.models import WebmailSession
from webmail import hostnames
from testkit.factories import UserFactory, make_mailbox

pytestmark = pytest.mark.django_db(transaction=True)  # hostname changes reach the request path on commit
HOST = "webmail.acme.test"
WEBMAIL = "webmail.mailwell.test"
PASSWORD = "correct-horse-battery"


@pytest.fixture(autouse=True)
def _served_names_forgotten():
    """Each process keeps the served names for a second; a test starts from none (its database is new)."""
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


def logo_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (120, 40), (250, 200, 10)).save(out, "PNG")
    return out.getvalue()


@pytest.fixture(autouse=True)
def _plans(plans):
    """Transactional tests start from an empty database: the plans first."""


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


def client_mailbox(partner, domain_name: str, local_part: str = "ann"):
    domain = domain_mark_verified(domain=domain_add_for_partner(partner=partner, name=domain_name))
    slots_grant(partner=partner, count=1)
    return partner_mailbox_open(partner=partner, domain=domain, local_part=local_part, password=PASSWORD,
                                plan_id="pro").mailbox


@pytest.fixture
def branded(partner, dns_zone, settings):
    """alice's partner account with its hostname verified (CNAME in a real DNS server) and a brand."""
    settings.WEBMAIL_HOST = WEBMAIL
    dns_zone.set(HOST, "CNAME", WEBMAIL)
    webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname=HOST))
    return brand_update(partner=partner, brand_name="Acme Mail", primary=Fill.parse("#0f766e", "#134e4a", 180),
                        secondary=Fill.parse("#fef3c7"), logo=logo_reencode(logo_png()))


@pytest.fixture
def ann(partner):
    return client_mailbox(partner, "acme-client.test")


@pytest.fixture
def dora_mailbox(db):
    user = UserFactory(email="dora@example.test", account__plan_code="premium")
    other = hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    return client_mailbox(other, "dora-client.test", "zed")


def on_host(client=None, host=HOST, **options) -> Client:
    return client or Client(HTTP_HOST=host, **options)


def sign_in(client, address, password=PASSWORD, path="/"):
    return client.post(path, {"address": address, "password": password})


# routing and the brand


def test_the_verified_hostname_serves_the_branded_sign_in_page_at_the_root(branded):
    page = Client(HTTP_HOST=HOST).get("/")
    html = page.content.decode()
    assert page.status_code == 200 and "Sign in to your mailbox" in html
    assert "<title>Sign in · Acme Mail</title>" in html and ">Acme Mail</span>" in html
    assert "Mailwell" not in html  # white label: nothing of the platform's name
    style = re.search(r'<link rel="stylesheet" href="(/brand/[0-9a-f]+/style\.css)">', html).group(1)
    logo = re.search(r'<img class="brand__logo" src="(/brand/[0-9a-f]+/logo)"', html).group(1)
    assert f'action="/"' in html  # the sign-in form posts to the hostname's root
    css = Client(HTTP_HOST=HOST).get(style)
    assert css.status_code == 200 and css["Content-Type"] == "text/css; charset=utf-8"
    assert css["Cache-Control"] == "public, max-age=31536000, immutable"
    body = css.content.decode()
    assert "--primary: #0f766e;" in body and "linear-gradient(180deg, #0f766e, #134e4a)" in body
    assert "--brand-secondary-fill: #fef3c7;" in body
    image = Client(HTTP_HOST=HOST).get(logo)
    assert image.status_code == 200 and image["Content-Type"] in {"image/png", "image/webp"}
    assert image["X-Content-Type-Options"] == "nosniff" and image["Content-Security-Policy"] == "default-src 'none'"
    with Image.open(io.BytesIO(image.content)) as served:
        assert served.size == (120, 40)


def test_an_old_brand_version_redirects_to_the_current_one(branded):
    client = Client(HTTP_HOST=HOST)
    current = re.search(r'href="(/brand/[0-9a-f]+/style\.css)"', client.get("/").content.decode()).group(1)
    moved = client.get("/brand/0/style.css")
    assert moved.status_code == 302 and moved["Location"] == current


def test_a_hostname_that_is_not_verified_is_an_unknown_host(partner, dns_zone, settings):
    settings.WEBMAIL_HOST = WEBMAIL
    webmail_hostname_claim(partner=partner, hostname=HOST)  # claimed, DNS not in place
    assert Client(HTTP_HOST=HOST).get("/").status_code == 400
    assert Client(HTTP_HOST="never-claimed.example").get("/").status_code == 400


def test_the_platforms_host_is_untouched(branded):
    page = Client().get("/webmail/")
    html = page.content.decode()
    assert page.status_code == 200 and "Acme Mail" not in html and "/brand/" not in html
    assert Client().get("/brand/0/style.css").status_code == 404


def test_nothing_else_of_the_platform_exists_on_a_partners_hostname(branded):
    client = Client(HTTP_HOST=HOST)
    for path in ("/portal/domains/", "/v1/hosting/domains", "/admin/", "/accounts/login/", "/internal/tls/allowed",
                 "/openapi.json"):
        response = client.get(path, HTTP_ACCEPT="text/html")
        assert response.status_code == 404, path
        assert "Mailwell" not in response.content.decode(), path  # even the error page is white-label


def test_platform_links_under_webmail_land_on_the_same_page_at_the_root(branded):
    client = Client(HTTP_HOST=HOST)
    assert client.get("/webmail/inbox/?page=2")["Location"] == "/inbox/?page=2"
    assert client.get("/webmail//evil.example/")["Location"] == "/evil.example/"  # never off the host


def test_a_partner_that_is_suspended_loses_its_hostname(branded, partner):
    from django.core.cache import cache

    from webmail.hostnames import CACHE_KEY

    HostingPartner.objects.filter(pk=partner.pk).update(status=HostingPartner.Status.SUSPENDED)
    cache.delete(CACHE_KEY)  # what the cache's lifetime does by itself within a minute, in every process
    hostnames._forget_locally()
    assert Client(HTTP_HOST=HOST).get("/").status_code == 400


# who may sign in there


def test_a_client_mailbox_of_the_partner_signs_in_and_reads_its_mail_there(branded, ann):
    client = Client(HTTP_HOST=HOST)
    response = sign_in(client, ann.address)
    assert response.status_code == 302
    inbox = client.get(response["Location"], follow=True)
    assert inbox.status_code == 200 and inbox.redirect_chain[-1][0] == "/inbox/"
    html = inbox.content.decode()
    assert ann.address in html and ">Acme Mail</span>" in html and 'href="/inbox/"' in html


def test_a_mailbox_of_another_partner_cannot_sign_in_there_but_can_on_the_platforms_host(branded, dora_mailbox):
    refused = sign_in(Client(HTTP_HOST=HOST), dora_mailbox.address)
    assert refused.status_code == 401 and "Wrong address or password." in refused.content.decode()
    assert not WebmailSession.objects.exists()
    assert sign_in(Client(), dora_mailbox.address, path="/webmail/").status_code == 302
    assert WebmailSession.objects.count() == 1


def test_a_mailbox_outside_any_partner_cannot_sign_in_there(branded, alice):
    mailbox = make_mailbox(alice.account, "own@alice-own.test", password=PASSWORD)
    assert sign_in(Client(HTTP_HOST=HOST), mailbox.address).status_code == 401


def test_another_partners_session_cookie_is_not_a_session_there(branded, dora_mailbox):
    platform = Client()
    sign_in(platform, dora_mailbox.address, path="/webmail/")
    branded_client = Client(HTTP_HOST=HOST)
    branded_client.cookies["mw_webmail"] = platform.cookies["mw_webmail"].value  # carried over by hand
    response = branded_client.get("/inbox/")
    assert response.status_code == 302 and response["Location"].startswith("/?next=")


def test_the_sign_in_form_passes_csrf_over_https_on_the_partners_hostname(branded, ann):
    client = Client(HTTP_HOST=HOST, enforce_csrf_checks=True)
    page = client.get("/", secure=True)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = client.post("/", {"address": ann.address, "password": PASSWORD, "csrfmiddlewaretoken": token},
                           secure=True, HTTP_ORIGIN=f"https://{HOST}", HTTP_REFERER=f"https://{HOST}/")
    assert response.status_code == 302
    forged = Client(HTTP_HOST=HOST, enforce_csrf_checks=True)
    forged.get("/", secure=True)
    refused = forged.post("/", {"address": ann.address, "password": PASSWORD,
                                "csrfmiddlewaretoken": forged.cookies["csrftoken"].value},
                          secure=True, HTTP_ORIGIN="https://evil.example")
    assert refused.status_code == 403
