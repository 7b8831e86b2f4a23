"""Mail apps set themselves up: Thunderbird's config-v1.1.xml (by address, by the autoconfig.<domain>
Host, at the well-known path), Outlook's autodiscover POST (hostile or oversized bodies refused),
the Apple profile in the webmail for its signed-in owner, and the DNS wizard's recommended records,
which never decide a domain's verification. Only verified hosted domains are described."""
import plistlib
import xml.etree.ElementTree as ET

import pytest
from django.test import Client

from billing.services.mailboxes import partner_mailbox_open
from mailcore.domains.services import domain_create, domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from mailcore.store.factory import store_for
from webmail import hostnames
from webmail.branding import brand_update
from webmail.hostnames import webmail_hostname_check, webmail_hostname_claim
from testkit.factories import UserFactory, make_domain, make_mailbox

pytestmark = pytest.mark.django_db
PASSWORD = "mailbox-password-1"
MAIL_HOST = "mail.mailwell.test"
WEBMAIL = "webmail.mailwell.test"
REQUEST_NS = "http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006"
RESPONSE_NS = "http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006"
OUTLOOK_NS = "http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a"
PROFILE = "/webmail/settings/mail-apps/profile.mobileconfig"
MAIL_APPS = "/webmail/settings/mail-apps/"


@pytest.fixture(autouse=True)
def _hosts(settings):
    settings.MAIL_HOST = MAIL_HOST
    settings.WEBMAIL_HOST = WEBMAIL
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, WEBMAIL]
    hostnames._forget_locally()
    yield
    hostnames._forget_locally()


@pytest.fixture
def ann(alice):
    """ann@customer.test, on alice's premium account (contacts and calendar included)."""
    mailbox = make_mailbox(alice.account, "ann@customer.test", password=PASSWORD, display_name="Ann Example")
    store_for(mailbox).ensure_folders()
    return mailbox


@pytest.fixture
def webmail_client(settings):
    """A browser on the platform's webmail, https://webmail.mailwell.test (TLS ended at the proxy)."""
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return Client(HTTP_HOST=WEBMAIL, HTTP_X_FORWARDED_PROTO="https")


@pytest.fixture
def mail_servers(settings):
    """Dovecot and Postfix serve mail apps (MAIL_STORE=imap), as in production; asked after the mailbox
    fixtures, whose set-up uses the embedded store."""
    settings.MAIL_STORE = "imap"


def outlook_request(address: str, schema: str = OUTLOOK_NS) -> bytes:
    """What Outlook posts (its request schema 2006)."""
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<Autodiscover xmlns="{REQUEST_NS}">\n  <Request>\n'
            f'    <EMailAddress>{address}</EMailAddress>\n'
            f'    <AcceptableResponseSchema>{schema}</AcceptableResponseSchema>\n'
            f'  </Request>\n</Autodiscover>\n').encode()


def text(element, path: str, ns: dict | None = None) -> str:
    found = element.find(path, ns or {})
    assert found is not None, path
    return found.text


def sign_in(client, address="ann@customer.test", password=PASSWORD):
    response = client.post("/webmail/", {"address": address, "password": password})
    assert response.status_code == 302
    return client


# Thunderbird


def test_thunderbird_gets_the_imap_smtp_and_dav_settings_of_a_hosted_domain(client, ann):
    response = client.get("/mail/config-v1.1.xml", {"emailaddress": "ann@customer.test"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    root = ET.fromstring(response.content)
    assert (root.tag, root.get("version")) == ("clientConfig", "1.1")
    provider = root.find("emailProvider")
    assert provider.get("id") == "customer.test"
    assert text(provider, "domain") == "customer.test"
    assert text(provider, "displayName") == "Mailwell"
    incoming = provider.find("incomingServer")
    assert incoming.get("type") == "imap"
    assert [text(incoming, tag) for tag in ("hostname", "port", "socketType", "authentication", "username")] == \
        [MAIL_HOST, "993", "SSL", "password-cleartext", "%EMAILADDRESS%"]
    outgoing = provider.find("outgoingServer")
    assert outgoing.get("type") == "smtp"
    assert [text(outgoing, tag) for tag in ("hostname", "port", "socketType", "authentication", "username")] == \
        [MAIL_HOST, "587", "STARTTLS", "password-cleartext", "%EMAILADDRESS%"]
    for tag, kind in (("addressBook", "carddav"), ("calendar", "caldav")):
        collection = root.find(tag)
        assert collection.get("type") == kind
        assert text(collection, "serverURL") == f"https://{WEBMAIL}/dav/"
        assert text(collection, "username") == "%EMAILADDRESS%"


def test_thunderbird_is_answered_by_the_autoconfig_host_without_an_address(ann):
    response = Client(HTTP_HOST="autoconfig.customer.test").get("/mail/config-v1.1.xml")

    assert response.status_code == 200
    assert ET.fromstring(response.content).find("emailProvider").get("id") == "customer.test"


def test_thunderbird_is_answered_at_the_well_known_path(client, ann):
    response = client.get("/.well-known/autoconfig/mail/config-v1.1.xml", {"emailaddress": "ann@customer.test"})

    assert response.status_code == 200
    assert text(ET.fromstring(response.content), "emailProvider/domain") == "customer.test"


def test_thunderbird_never_tells_whether_a_mailbox_exists(client, ann):
    first = client.get("/mail/config-v1.1.xml", {"emailaddress": "ann@customer.test"})
    second = client.get("/mail/config-v1.1.xml", {"emailaddress": "nobody@customer.test"})

    assert second.status_code == 200 and second.content == first.content


@pytest.mark.parametrize("query", [{"emailaddress": "ann@unknown.test"}, {"emailaddress": "ann@pending.test"},
                                   {"emailaddress": "not-an-address"}, {"emailaddress": "ann@bad..name"}, {}])
def test_thunderbird_gets_404_for_a_domain_we_do_not_host(client, ann, alice, query):
    domain_create(account=alice.account, name="pending.test")  # claimed, not verified

    assert client.get("/mail/config-v1.1.xml", query).status_code == 404


def test_an_autoconfig_host_of_a_domain_we_do_not_host_is_an_unknown_host(ann, alice):
    domain_create(account=alice.account, name="pending.test")

    for host in ("autoconfig.unknown.test", "autoconfig.pending.test", "elsewhere.customer.test"):
        assert Client(HTTP_HOST=host).get("/mail/config-v1.1.xml").status_code == 400, host


def test_the_autoconfig_host_serves_nothing_else_of_the_platform(ann):
    on_host = Client(HTTP_HOST="autoconfig.customer.test")

    for path in ("/webmail/", "/portal/domains/", "/admin/", "/v1/hosting/domains", "/"):
        assert on_host.get(path).status_code == 404, path


@pytest.mark.parametrize("path", ["/.well-known/autoconfig/mail/config-v1.1.xml", "/.well-known/mail-v1.xml"])
def test_the_domain_itself_answers_at_the_well_known_paths(ann, alice, path):
    """What docs/mail-apps.md lists: Thunderbird's well-known path (and the autoconfig draft's mail-v1.xml)
    with Host: <domain>, without an address, as when the domain's web server is this one."""
    on_domain = Client(HTTP_HOST="customer.test")

    response = on_domain.get(path)
    assert response.status_code == 200, response.content
    config = ET.fromstring(response.content)
    assert config.find("emailProvider").get("id") == "customer.test"
    assert text(config, "emailProvider/incomingServer/hostname") == MAIL_HOST
    assert Client(HTTP_HOST="autoconfig.customer.test").get(path).content == response.content
    by_address = on_domain.get(path, {"emailaddress": "ann@customer.test"})
    assert by_address.status_code == 200 and by_address.content == response.content


def test_on_the_domain_itself_nothing_else_answers_and_unhosted_domains_are_unknown(ann, alice):
    domain_create(account=alice.account, name="pending.test")  # claimed, not verified
    on_domain = Client(HTTP_HOST="customer.test")
    for path in ("/webmail/", "/mail/config-v1.1.xml", "/admin/", "/", "/.well-known/caldav"):
        assert on_domain.get(path).status_code == 400, path
    for host in ("pending.test", "unknown.test"):
        assert Client(HTTP_HOST=host).get("/.well-known/mail-v1.xml").status_code == 400, host


def test_a_partners_brand_name_is_the_display_name(client, alice):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    brand_update(partner=partner, brand_name="Acme <Mail> & Co")
    make_mailbox(alice.account, "ann@customer.test")

    response = client.get("/mail/config-v1.1.xml", {"emailaddress": "ann@customer.test"})

    assert b"Acme &lt;Mail&gt; &amp; Co" in response.content  # escaped, and read back whole
    assert text(ET.fromstring(response.content), "emailProvider/displayName") == "Acme <Mail> & Co"


# Outlook


def test_outlook_gets_imap_and_smtp_settings_for_a_hosted_address(ann):
    client = Client(enforce_csrf_checks=True)  # no cookies, no token: autodiscover is exempt

    response = client.post("/autodiscover/autodiscover.xml", outlook_request("ann@customer.test"),
                           content_type="text/xml")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    root = ET.fromstring(response.content)
    assert root.tag == f"{{{RESPONSE_NS}}}Autodiscover"
    ns = {"r": OUTLOOK_NS}
    account = root.find("r:Response/r:Account", ns)
    assert (text(account, "r:AccountType", ns), text(account, "r:Action", ns)) == ("email", "settings")
    protocols = {text(p, "r:Type", ns): p for p in account.findall("r:Protocol", ns)}
    assert set(protocols) == {"IMAP", "SMTP"}
    imap, smtp = protocols["IMAP"], protocols["SMTP"]
    assert [text(imap, f"r:{tag}", ns) for tag in ("Server", "Port", "SSL", "LoginName", "SPA", "AuthRequired")] == \
        [MAIL_HOST, "993", "on", "ann@customer.test", "off", "on"]
    assert [text(smtp, f"r:{tag}", ns) for tag in ("Server", "Port", "Encryption", "LoginName", "SPA")] == \
        [MAIL_HOST, "587", "TLS", "ann@customer.test", "off"]


def test_outlook_is_answered_at_the_capitalised_path_and_on_the_autodiscover_host(ann):
    for client, path in ((Client(), "/Autodiscover/Autodiscover.xml"),
                         (Client(HTTP_HOST="autodiscover.customer.test"), "/autodiscover/autodiscover.xml"),
                         (Client(HTTP_HOST="autodiscover.customer.test"), "/Autodiscover/Autodiscover.xml")):
        response = client.post(path, outlook_request("ann@customer.test"), content_type="text/xml")
        assert response.status_code == 200, path
        assert b"<Type>IMAP</Type>" in response.content


def test_outlook_gets_404_for_a_domain_we_do_not_host(client, ann):
    response = client.post("/autodiscover/autodiscover.xml", outlook_request("ann@unknown.test"),
                           content_type="text/xml")

    assert response.status_code == 404


@pytest.mark.parametrize("body", [b"", b"not xml", b"<Autodiscover><Request/></Autodiscover>",
                                  b"<Other><Request><EMailAddress>ann@customer.test</EMailAddress></Request></Other>",
                                  b"<Autodiscover><Request><EMailAddress>ann</EMailAddress></Request></Autodiscover>"])
def test_a_body_that_is_no_autodiscover_request_gets_error_600(client, ann, body):
    response = client.post("/autodiscover/autodiscover.xml", body, content_type="text/xml")

    assert response.status_code == 400
    error = ET.fromstring(response.content).find(f"{{{RESPONSE_NS}}}Response/{{{RESPONSE_NS}}}Error")
    assert text(error, f"{{{RESPONSE_NS}}}ErrorCode") == "600"
    assert text(error, f"{{{RESPONSE_NS}}}Message") == "Invalid Request"


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">]>
<Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006">
<Request><EMailAddress>ann@customer.test&lol5;</EMailAddress></Request></Autodiscover>"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Autodiscover><Request><EMailAddress>&xxe;</EMailAddress></Request></Autodiscover>"""
DTD_ONLY = b"""<?xml version="1.0"?><!DOCTYPE Autodiscover SYSTEM "http://127.0.0.1:9/x.dtd">
<Autodiscover><Request><EMailAddress>ann@customer.test</EMailAddress></Request></Autodiscover>"""


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY, DTD_ONLY], ids=["billion-laughs", "xxe", "dtd"])
def test_hostile_xml_is_refused_with_400(client, ann, body):
    response = client.post("/autodiscover/autodiscover.xml", body, content_type="text/xml")

    assert response.status_code == 400
    assert b"lollol" not in response.content and b"root:" not in response.content
    assert b"<ErrorCode>600</ErrorCode>" in response.content


def test_an_oversized_body_is_refused_with_413(client, ann):
    padding = b"<!-- " + b"x" * 20_000 + b" -->"
    body = outlook_request("ann@customer.test").replace(b"<Request>", padding + b"<Request>")

    response = client.post("/autodiscover/autodiscover.xml", body, content_type="text/xml")

    assert response.status_code == 413


def test_an_activesync_client_is_told_no_provider_serves_its_schema(client, ann):
    schema = "http://schemas.microsoft.com/exchange/autodiscover/mobilesync/responseschema/2006"
    response = client.post("/autodiscover/autodiscover.xml", outlook_request("ann@customer.test", schema),
                           content_type="text/xml")

    assert response.status_code == 200
    assert b"<ErrorCode>601</ErrorCode>" in response.content and b"<Protocol>" not in response.content


def test_autodiscover_answers_only_post(client, ann):
    response = client.get("/autodiscover/autodiscover.xml")

    assert response.status_code == 405
    assert response["Allow"] == "POST"


# the Apple profile and the mail apps page


@pytest.mark.parametrize("url", [PROFILE, MAIL_APPS])
def test_the_profile_and_the_mail_apps_page_send_everyone_else_to_sign_in(client, ann, url):
    response = client.get(url)

    assert (response.status_code, response["Location"]) == (302, f"/webmail/?next={url}")


def test_the_signed_in_owner_downloads_a_profile_with_mail_contacts_and_calendar(webmail_client, ann, mail_servers):
    response = sign_in(webmail_client).get(PROFILE)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-apple-aspen-config"
    assert response["Content-Disposition"] == 'attachment; filename="ann-at-customer.test.mobileconfig"'
    profile = plistlib.loads(response.content)
    assert (profile["PayloadType"], profile["PayloadVersion"]) == ("Configuration", 1)
    mail, carddav, caldav = profile["PayloadContent"]
    assert [p["PayloadType"] for p in (mail, carddav, caldav)] == \
        ["com.apple.mail.managed", "com.apple.carddav.account", "com.apple.caldav.account"]
    assert {key: mail[key] for key in (
        "EmailAccountType", "EmailAddress", "EmailAccountName", "IncomingMailServerHostName",
        "IncomingMailServerPortNumber", "IncomingMailServerUseSSL", "IncomingMailServerUsername",
        "OutgoingMailServerHostName", "OutgoingMailServerPortNumber", "OutgoingMailServerUseSSL",
        "OutgoingMailServerUsername", "OutgoingPasswordSameAsIncomingPassword")} == {
        "EmailAccountType": "EmailTypeIMAP", "EmailAddress": "ann@customer.test", "EmailAccountName": "Ann Example",
        "IncomingMailServerHostName": MAIL_HOST, "IncomingMailServerPortNumber": 993,
        "IncomingMailServerUseSSL": True, "IncomingMailServerUsername": "ann@customer.test",
        "OutgoingMailServerHostName": MAIL_HOST, "OutgoingMailServerPortNumber": 587,
        "OutgoingMailServerUseSSL": True, "OutgoingMailServerUsername": "ann@customer.test",
        "OutgoingPasswordSameAsIncomingPassword": True}
    for payload, prefix in ((carddav, "CardDAV"), (caldav, "CalDAV")):
        assert {key: payload[f"{prefix}{key}"] for key in ("HostName", "Port", "UseSSL", "Username", "PrincipalURL")} \
            == {"HostName": WEBMAIL, "Port": 443, "UseSSL": True, "Username": "ann@customer.test",
                "PrincipalURL": "/dav/principals/ann@customer.test/"}
    for payload in (profile, mail, carddav, caldav):
        assert payload["PayloadVersion"] == 1 and payload["PayloadDisplayName"]
        assert payload["PayloadIdentifier"].startswith("test.mailwell.webmail.")
    assert len({p["PayloadUUID"] for p in (profile, mail, carddav, caldav)}) == 4


def test_the_profile_never_holds_the_password(client, ann, mail_servers):
    profile_bytes = sign_in(client).get(PROFILE).content

    assert PASSWORD.encode() not in profile_bytes
    profile = plistlib.loads(profile_bytes)
    keys = {key for payload in [profile, *profile["PayloadContent"]] for key in payload}
    assert {key for key in keys if "Password" in key} == {"OutgoingPasswordSameAsIncomingPassword"}


def test_installing_the_profile_again_replaces_it(client, ann, mail_servers):
    signed_in = sign_in(client)
    first, second = (plistlib.loads(signed_in.get(PROFILE).content) for _ in range(2))

    assert first == second  # same identifiers and UUIDs: the device replaces the earlier profile


def test_a_mailbox_without_contacts_and_calendar_gets_the_mail_account_only(client, charlie, settings):
    make_mailbox(charlie.account, "carl@charlie.test", password=PASSWORD)  # charlie's free plan
    settings.MAIL_STORE = "imap"

    profile = plistlib.loads(sign_in(client, "carl@charlie.test").get(PROFILE).content)

    assert [p["PayloadType"] for p in profile["PayloadContent"]] == ["com.apple.mail.managed"]


def test_the_mail_apps_page_explains_each_app_and_lists_the_manual_settings(webmail_client, ann, mail_servers):
    signed_in = sign_in(webmail_client)

    page = signed_in.get(MAIL_APPS).content.decode()

    for heading in ("iPhone, iPad and Mac", "Thunderbird", "Outlook", "Other apps: the settings by hand"):
        assert heading in page
    assert f'href="{PROFILE}"' in page
    for row in (f'Incoming mail (IMAP)</th><td class="mono">{MAIL_HOST}</td><td class="mono">993</td>',
                f'Outgoing mail (SMTP)</th><td class="mono">{MAIL_HOST}</td><td class="mono">587</td>',
                f'Contacts (CardDAV)</th><td class="mono break">https://{WEBMAIL}/dav/</td>',
                f'Calendar (CalDAV)</th><td class="mono break">https://{WEBMAIL}/dav/</td>'):
        assert row in page
    assert 'href="/webmail/settings/mail-apps/" aria-current="page">Mail apps</a>' in page
    assert f'href="{MAIL_APPS}">Mail apps</a>' in signed_in.get("/webmail/settings/").content.decode()


def test_with_the_embedded_store_the_mail_apps_page_says_mail_apps_cannot_connect(webmail_client, ann, settings):
    """MAIL_STORE=embedded (make run's default) runs no IMAP or SMTP server: the page says so instead of
    offering a profile or settings that cannot work, and still gives contacts and calendar sync."""
    settings.MAIL_STORE = "embedded"
    signed_in = sign_in(webmail_client)

    page = signed_in.get(MAIL_APPS).content.decode()

    assert "Mail apps cannot connect to this server" in page
    assert "runs no IMAP or SMTP server" in page
    assert PROFILE not in page and "Download the profile" not in page
    assert "Incoming mail (IMAP)" not in page and "Outgoing mail (SMTP)" not in page
    assert f'Contacts (CardDAV)</th><td class="mono break">https://{WEBMAIL}/dav/</td>' in page
    assert signed_in.get(PROFILE).status_code == 404


def test_in_a_local_run_the_mail_apps_page_gives_dav_where_the_owner_reached_the_webmail(client, ann, settings):
    """`make run` with the embedded store: the owner on http://127.0.0.1:9000 is told that address, scheme
    and port for DAV, not the production webmail name on 443."""
    settings.MAIL_STORE = "embedded"
    settings.PUBLIC_BASE_URL = "http://127.0.0.1:9000"
    local = sign_in(Client(HTTP_HOST="127.0.0.1:9000"))

    page = local.get(MAIL_APPS).content.decode()

    for kind in ("Contacts (CardDAV)", "Calendar (CalDAV)"):
        assert (f'{kind}</th><td class="mono break">http://127.0.0.1:9000/dav/</td><td class="mono">9000</td>'
                f'<td>None (plain HTTP)</td>') in page
    assert WEBMAIL not in page


def test_on_a_host_that_is_not_the_platforms_own_dav_is_at_the_public_base_url(client, ann, settings):
    settings.MAIL_STORE = "embedded"
    settings.ALLOWED_HOSTS = ["*"]
    settings.PUBLIC_BASE_URL = "https://mail.mailwell.test:8443"

    page = sign_in(Client(HTTP_HOST="elsewhere.test")).get(MAIL_APPS).content.decode()

    assert ('Contacts (CardDAV)</th><td class="mono break">https://mail.mailwell.test:8443/dav/</td>'
            '<td class="mono">8443</td><td>SSL/TLS</td>') in page
    assert "elsewhere.test" not in page


# on a partner's own hostname


@pytest.mark.django_db(transaction=True)  # the verified hostname reaches the request path on commit
def test_on_a_partners_hostname_dav_is_reached_at_that_hostname(plans, alice, dns_zone, settings):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    dns_zone.set("webmail.acme.test", "CNAME", WEBMAIL)
    webmail_hostname_check(hostname=webmail_hostname_claim(partner=partner, hostname="webmail.acme.test"))
    brand_update(partner=partner, brand_name="Acme Mail")
    slots_grant(partner=partner, count=1)
    partner_mailbox_open(partner=partner, domain=domain_mark_verified(domain=domain_add_for_partner(
        partner=partner, name="customer.test")), local_part="ann", password=PASSWORD, plan_id="pro")
    dora = UserFactory(email="dora@example.test", account__plan_code="premium")
    make_mailbox(dora.account, "zed@dora.test")
    on_host = Client(HTTP_HOST="webmail.acme.test")

    config = ET.fromstring(on_host.get("/mail/config-v1.1.xml", {"emailaddress": "ann@customer.test"}).content)
    assert text(config, "addressBook/serverURL") == "https://webmail.acme.test/dav/"
    assert text(config, "emailProvider/displayName") == "Acme Mail"
    assert on_host.get("/mail/config-v1.1.xml", {"emailaddress": "zed@dora.test"}).status_code == 404  # not acme's
    # elsewhere, the partner's verified hostname is still where its customers' DAV lives
    config = ET.fromstring(Client(HTTP_HOST="autoconfig.customer.test").get("/mail/config-v1.1.xml").content)
    assert text(config, "calendar/serverURL") == "https://webmail.acme.test/dav/"

    assert on_host.post("/", {"address": "ann@customer.test", "password": PASSWORD}).status_code == 302
    settings.MAIL_STORE = "imap"  # Dovecot and Postfix serve mail apps, as in production
    profile = plistlib.loads(on_host.get("/settings/mail-apps/profile.mobileconfig").content)
    assert profile["PayloadContent"][1]["CardDAVHostName"] == "webmail.acme.test"
    assert profile["PayloadIdentifier"].startswith("test.acme.webmail.")


# the DNS wizard


@pytest.fixture
def partner_client(client, alice):
    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    client.force_login(alice)
    client.partner = partner
    return client


def test_the_dns_wizard_lists_the_mail_app_records_as_recommended(partner_client):
    domain = domain_add_for_partner(partner=partner_client.partner, name="acme.test")

    page = partner_client.get(f"/portal/domains/{domain.pk}/").content.decode()

    assert "Mail app set-up" in page and "not needed for verification" in page
    for key, record_type, host, value in [
        ("autoconfig", "CNAME", "autoconfig", WEBMAIL),
        ("autodiscover", "CNAME", "autodiscover", WEBMAIL),
        ("srv_imaps", "SRV", "_imaps._tcp", f"0 1 993 {MAIL_HOST}"),
        ("srv_submission", "SRV", "_submission._tcp", f"0 1 587 {MAIL_HOST}"),
        ("srv_carddavs", "SRV", "_carddavs._tcp", f"0 1 443 {WEBMAIL}"),
        ("srv_caldavs", "SRV", "_caldavs._tcp", f"0 1 443 {WEBMAIL}"),
        ("txt_carddavs", "TXT", "_carddavs._tcp", "path=/dav/"),
        ("txt_caldavs", "TXT", "_caldavs._tcp", "path=/dav/"),
    ]:
        assert f'id="recommended-{key}-host" type="text" value="{host}"' in page, key
        assert f'id="recommended-{key}-value" type="text" value="{value}"' in page, key
        assert f"({record_type} record)" in page
    assert page.count('class="dns-record dns-record--optional"') == 9  # and the tracking host's CNAME
    assert page.count('class="dns-record dns-record--unchecked"') == 8  # the checked records, unchanged
    assert f"Priority <span class=\"mono\">0</span>, weight <span class=\"mono\">1</span>, port " \
           f"<span class=\"mono\">993</span>, target <span class=\"mono\">{MAIL_HOST}</span>." in page


def test_a_domain_verifies_without_the_recommended_records(partner_client, dns_zone):
    from django.conf import settings

    domain = domain_add_for_partner(partner=partner_client.partner, name="acme.test")
    dns_zone.set("acme.test", "MX", f"10 {MAIL_HOST}")
    dns_zone.set("acme.test", "TXT", f"{settings.DOMAIN_VERIFY_PREFIX}={domain.verification_token}")

    page = partner_client.post(f"/portal/domains/{domain.pk}/check/", HTTP_HX_REQUEST="true").content.decode()

    domain.refresh_from_db()
    assert domain.status == "verified"
    assert "2 of 8 records right" in page  # the recommended ones are neither checked nor counted
    assert [row["key"] for row in domain.dns_check] == ["mx", "ownership", "spf", "dmarc", "dkim", "mta_sts",
                                                          "mta_sts_host", "tlsrpt", "tracking"]
    page = partner_client.get(f"/portal/domains/{domain.pk}/").content.decode()
    assert page.count('class="dns-record dns-record--optional"') == 9


def test_the_recommended_records_point_dav_at_the_partners_verified_hostname(plans, alice, client):
    from webmail.client_settings import recommended_records
    from webmail.models import WebmailHostname
    from django.utils import timezone

    partner = hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)
    WebmailHostname.objects.create(partner=partner, hostname="webmail.acme.test", verified_at=timezone.now())
    domain = make_domain(alice.account, "customer.test")

    values = {record.key: record.value for record in recommended_records(domain)}

    assert values["srv_carddavs"] == "0 1 443 webmail.acme.test"
    assert values["autoconfig"] == WEBMAIL  # the autoconfig names always answer at the platform's name
