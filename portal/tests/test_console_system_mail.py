"""The console's "System mail domain" page: the operator sees the SPF, DKIM and DMARC records to
publish for SYSTEM_MAIL_DOMAIN and each one's state as the loopback DNS holds it; nobody else sees it."""
import pytest

from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from portal.tests.test_operator_console import HTML, console, sign_in, staff, staff_secret  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

PAGE = "/admin/system-mail-domain/"
DOMAIN = "mail.platform.test"


@pytest.fixture
def platform(settings):
    settings.SYSTEM_MAIL_DOMAIN = DOMAIN
    settings.DEFAULT_FROM_EMAIL = f"Mailwell <no-reply@{DOMAIN}>"
    settings.RELAY_HOST = "relay.platform.test"


def test_the_console_lists_the_platform_domains_records_as_missing_until_published(console, platform, dns_zone):
    page = console.get(PAGE, **HTML).content.decode()

    key = dkim_key_for(DOMAIN)
    assert "Some records are missing or wrong" in page
    assert f"{key.selector}._domainkey.{DOMAIN}" in page and dkim_public_record(key) in page
    assert "v=spf1 mx include:relay.platform.test ~all" in page and f"_dmarc.{DOMAIN}" in page
    assert "v=DMARC1; p=none" in page and "dmarc-reports@" not in page  # no report address we do not read
    assert page.count("Not found:") == 3 and "no SPF record" in page and "no DKIM record" in page
    assert '<a href="/admin/system-mail-domain/">' in console.get("/admin/", **HTML).content.decode()


def test_published_records_show_as_ok(console, platform, dns_zone):
    key = dkim_key_for(DOMAIN)
    dns_zone.set(DOMAIN, "TXT", "v=spf1 mx include:relay.platform.test ~all")
    dns_zone.set(f"_dmarc.{DOMAIN}", "TXT", "v=DMARC1; p=quarantine")
    dns_zone.set(f"{key.selector}._domainkey.{DOMAIN}", "TXT", dkim_public_record(key))

    page = console.get(PAGE, **HTML).content.decode()

    assert "All records are published." in page and "Not found:" not in page
    assert page.count("<td>OK</td>") == 3


def test_a_signed_in_user_who_is_not_an_operator_does_not_see_it(client, charlie, platform, dns_zone):
    sign_in(client, charlie, next_url=PAGE)

    response = client.get(PAGE, **HTML)

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.get(response["Location"], **HTML).status_code == 403
    assert DOMAIN not in response.content.decode()
