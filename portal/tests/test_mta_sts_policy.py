"""https://mta-sts.<domain>/.well-known/mta-sts.txt: the MTA-STS policy (RFC 8461) of a verified hosted
domain, chosen by the Host header; nothing for any other name or path; and Caddy's certificate ask
saying yes for exactly those policy hosts."""
import pytest
from django.test import Client

from mailcore.domains.mta_sts import domain_mta_sts_mode_set
from mailcore.domains.services import domain_create
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

PATH = "/.well-known/mta-sts.txt"


def policy_host(name: str) -> Client:
    return Client(HTTP_HOST=f"mta-sts.{name}")


@pytest.fixture
def acme(alice):
    return make_domain(alice.account, "acme.test")


def test_a_verified_domain_serves_its_testing_policy_as_plain_text(acme, settings):
    settings.MAIL_HOST, settings.MTA_STS_MAX_AGE_SECONDS = "mx.mailwell.test", 604800
    response = policy_host("acme.test").get(PATH)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == b"version: STSv1\r\nmode: testing\r\nmx: mx.mailwell.test\r\nmax_age: 604800\r\n"
    assert "Set-Cookie" not in response


def test_the_policy_follows_the_partners_mode(acme, settings):
    settings.MAIL_HOST = "mail.mailwell.test"
    domain_mta_sts_mode_set(domain=acme, mode="enforce")
    assert policy_host("acme.test").get(PATH).content == (
        b"version: STSv1\r\nmode: enforce\r\nmx: mail.mailwell.test\r\nmax_age: 604800\r\n")
    domain_mta_sts_mode_set(domain=acme, mode="none")
    assert b"mode: none\r\n" in policy_host("acme.test").get(PATH).content


def test_the_host_is_matched_without_regard_to_case_port_or_trailing_dot(acme):
    for host in ("MTA-STS.Acme.Test", "mta-sts.acme.test:443", "mta-sts.acme.test."):
        assert Client(HTTP_HOST=host).get(PATH).status_code == 200, host


def test_an_unknown_or_unverified_domain_has_no_policy(alice):
    domain_create(account=alice.account, name="pending.test")
    for name in ("pending.test", "nowhere.test"):
        response = policy_host(name).get(PATH)
        assert (response.status_code, response["Content-Type"]) == (404, "text/plain"), name
        assert b"mode:" not in response.content


def test_the_policy_host_serves_nothing_else_of_the_platform(acme):
    on_host = policy_host("acme.test")
    for path in ("/", "/portal/domains/", "/v1/hosting/domains", "/accounts/login/", "/mail/config-v1.1.xml",
                 "/.well-known/mta-sts.txt.bak"):
        assert on_host.get(path).status_code == 404, path
    assert on_host.post(PATH).status_code == 405


def test_the_path_on_other_hosts_is_not_a_policy(acme):
    # the platform's own name has no such page; a name Django does not accept at all is its 400
    for host, status in (("testserver", 404), ("acme.test", 400), ("www.acme.test", 400)):
        response = Client(HTTP_HOST=host).get(PATH)
        assert response.status_code == status, host
        assert b"STSv1" not in response.content


def test_caddy_may_get_a_certificate_for_a_verified_domains_policy_host_only(acme, alice):
    domain_create(account=alice.account, name="pending.test")
    ask = Client()
    assert ask.get("/internal/tls/allowed", {"domain": "mta-sts.acme.test"}).json() == {
        "domain": "mta-sts.acme.test", "allowed": True}
    for name in ("mta-sts.pending.test", "mta-sts.nowhere.test", "mta-sts.sub.acme.test", "other.acme.test",
                 "mta-sts", "mta-sts.", "xmta-sts.acme.test"):
        assert ask.get("/internal/tls/allowed", {"domain": name}).status_code == 404, name


def test_a_domain_that_stops_being_verified_stops_serving(acme):
    assert policy_host("acme.test").get(PATH).status_code == 200
    acme.status = "failed"
    acme.save(update_fields=["status"])
    assert policy_host("acme.test").get(PATH).status_code == 404
    assert Client().get("/internal/tls/allowed", {"domain": "mta-sts.acme.test"}).status_code == 404
