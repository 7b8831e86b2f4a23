"""/v1/hosting/domains/{id}/mta-sts: a partner reads a client domain's MTA-STS policy and switches its mode;
the domain's dns_records carry the _mta-sts, mta-sts and _smtp._tls records, checked on the loopback DNS."""
import pytest
from django.test import Client

from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.dnscheck import CHECKED_RECORD_COUNT, expected_records
from mailcore.domains.models import Domain
from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import key_client
from testkit.dns_records import publish_transport_security

pytestmark = pytest.mark.django_db

POLICY = "version: STSv1\r\nmode: {mode}\r\nmx: mail.mailwell.test\r\nmax_age: 604800\r\n"
TRANSPORT = ("mta_sts", "mta_sts_host", "tlsrpt")


def partner_of(user):
    return hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def acme(alice):
    return domain_add_for_partner(partner=partner_of(alice), name="acme.test")


@pytest.fixture
def hosting(alice, acme):
    return key_client(alice, list(PARTNER_SCOPES))


def publish_required(zone, domain):
    zone.set(domain.name, "MX", "10 mail.mailwell.test")
    zone.set(domain.name, "TXT", f"domain-verification={domain.verification_token}")


def transport_records(body) -> list[dict]:
    return [record for record in body["dns_records"] if record["host"] in ("_mta-sts", "mta-sts", "_smtp._tls")]


def test_a_new_domain_starts_in_testing_and_shows_the_policy_it_will_serve(hosting, acme):
    response = hosting.get(f"/v1/hosting/domains/{acme.pk}/mta-sts")
    assert response.status_code == 200
    body = response.json()
    assert body == {"domain": "acme.test", "mode": "testing", "policy_id": body["policy_id"],
                    "policy_url": "https://mta-sts.acme.test/.well-known/mta-sts.txt",
                    "policy": POLICY.format(mode="testing"), "served": False}
    assert body["policy_id"].isalnum() and 1 <= len(body["policy_id"]) <= 32


def test_the_partner_switches_to_enforce_and_the_policy_and_its_id_change(hosting, acme, dns_zone):
    before = hosting.get(f"/v1/hosting/domains/{acme.pk}/mta-sts").json()
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/mta-sts", {"mode": "enforce"}, format="json")
    assert response.status_code == 200
    after = response.json()
    assert (after["mode"], after["policy"]) == ("enforce", POLICY.format(mode="enforce"))
    assert after["policy_id"] != before["policy_id"]
    assert Domain.objects.get(pk=acme.pk).mta_sts_mode == "enforce"
    publish_required(dns_zone, acme)
    verified = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert transport_records(verified)[0]["value"] == f"v=STSv1; id={after['policy_id']}"
    served = Client(HTTP_HOST="mta-sts.acme.test").get("/.well-known/mta-sts.txt")
    assert served.content.decode() == POLICY.format(mode="enforce")
    back = hosting.patch(f"/v1/hosting/domains/{acme.pk}/mta-sts", {"mode": "testing"}, format="json").json()
    assert (back["mode"], back["policy_id"]) == ("testing", before["policy_id"])


def test_another_mode_is_refused_with_a_field_error_and_changes_nothing(hosting, acme):
    for body in ({"mode": "strict"}, {"mode": ""}, {"mode": None}, {}, {"mode": "enforce", "max_age": 5}):
        response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/mta-sts", body, format="json")
        assert response.status_code == 422, body
        assert "detail" in response.json()
    assert hosting.patch(f"/v1/hosting/domains/{acme.pk}/mta-sts", {"mode": "strict"},
                         format="json").json()["errors"]["mode"]
    assert Domain.objects.get(pk=acme.pk).mta_sts_mode == "testing"


def test_another_partners_domain_does_not_exist(hosting, charlie):
    theirs = domain_add_for_partner(partner=partner_of(charlie), name="charlie.test")
    assert hosting.get(f"/v1/hosting/domains/{theirs.pk}/mta-sts").status_code == 404
    response = hosting.patch(f"/v1/hosting/domains/{theirs.pk}/mta-sts", {"mode": "enforce"}, format="json")
    assert response.status_code == 404
    assert Domain.objects.get(pk=theirs.pk).mta_sts_mode == "testing"


def test_reading_needs_the_read_scope_and_switching_the_write_scope(alice, acme):
    reader = key_client(alice, ["partner:domains:read"])
    assert reader.get(f"/v1/hosting/domains/{acme.pk}/mta-sts").status_code == 200
    assert reader.patch(f"/v1/hosting/domains/{acme.pk}/mta-sts", {"mode": "enforce"}, format="json").status_code == 403
    assert Domain.objects.get(pk=acme.pk).mta_sts_mode == "testing"


def test_the_records_to_create_include_mta_sts_its_policy_host_and_tls_rpt(hosting, acme):
    body = hosting.get(f"/v1/hosting/domains/{acme.pk}").json()
    policy_id = hosting.get(f"/v1/hosting/domains/{acme.pk}/mta-sts").json()["policy_id"]
    assert [(r["type"], r["host"], r["value"], r["ok"]) for r in transport_records(body)] == [
        ("TXT", "_mta-sts", f"v=STSv1; id={policy_id}", None),
        ("CNAME", "mta-sts", "webmail.mailwell.test", None),
        ("TXT", "_smtp._tls", "v=TLSRPTv1; rua=mailto:tls-reports@acme.test", None),
    ]
    checked = [record for record in expected_records(acme) if not record.optional]
    assert len(body["dns_records"]) == len(expected_records(acme)) and CHECKED_RECORD_COUNT == len(checked)


def test_published_transport_records_are_found_right(hosting, acme, dns_zone):
    publish_required(dns_zone, acme)
    publish_transport_security(dns_zone, "acme.test")
    body = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert [(r["ok"], r["reason"]) for r in transport_records(body)] == [(True, None)] * 3
    assert transport_records(body)[1]["found_value"] == "webmail.mailwell.test"


def test_each_wrong_transport_record_has_its_own_reason_and_verification_does_not_need_them(hosting, acme, dns_zone):
    publish_required(dns_zone, acme)
    dns_zone.set("_mta-sts.acme.test", "TXT", "v=STSv1; id=20240101T000000")
    dns_zone.set("mta-sts.acme.test", "CNAME", "policy.elsewhere.test")
    dns_zone.set("_smtp._tls.acme.test", "TXT", "v=TLSRPTv1; rua=mailto:tlsrpt@elsewhere.test")
    body = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert body["status"] == "verified"
    assert [(r["ok"], r["reason"], r["found_value"]) for r in transport_records(body)] == [
        (False, "the MTA-STS id is not the current policy's", "v=STSv1; id=20240101T000000"),
        (False, "the MTA-STS policy host points to policy.elsewhere.test, expected webmail.mailwell.test",
         "policy.elsewhere.test"),
        (False, "the TLS-RPT record does not send reports to our address",
         "v=TLSRPTv1; rua=mailto:tlsrpt@elsewhere.test"),
    ]


def test_two_records_and_missing_ones_are_told_apart(hosting, acme, dns_zone):
    publish_required(dns_zone, acme)
    dns_zone.set("_mta-sts.acme.test", "TXT", "v=STSv1; id=a1", "v=STSv1; id=b2")
    dns_zone.set("_smtp._tls.acme.test", "TXT", "v=TLSRPTv1; rua=mailto:a@x.test", "v=TLSRPTv1; rua=mailto:b@x.test")
    body = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert [r["reason"] for r in transport_records(body)] == [
        "two MTA-STS records", "no CNAME for the MTA-STS policy host; expected webmail.mailwell.test",
        "two TLS-RPT records"]


def test_a_flattened_policy_host_with_our_addresses_counts_and_a_second_report_address_is_fine(hosting, acme, dns_zone):
    publish_required(dns_zone, acme)
    publish_transport_security(dns_zone, "acme.test")
    dns_zone.set("webmail.mailwell.test", "A", "192.0.2.10")
    dns_zone.set("mta-sts.acme.test", "A", "192.0.2.10")
    dns_zone.records.pop(("mta-sts.acme.test", "CNAME"))
    dns_zone.set("_smtp._tls.acme.test", "TXT", "v=TLSRPTv1; rua=mailto:tls@other.test,mailto:tls-reports@acme.test")
    body = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert [(r["ok"], r["found_value"]) for r in transport_records(body)][1:] == [
        (True, "192.0.2.10"), (True, "v=TLSRPTv1; rua=mailto:tls@other.test,mailto:tls-reports@acme.test")]
    dns_zone.set("mta-sts.acme.test", "A", "198.51.100.7")
    body = hosting.post(f"/v1/hosting/domains/{acme.pk}/verify").json()
    assert transport_records(body)[1]["reason"] == (
        "the MTA-STS policy host points to 198.51.100.7, expected webmail.mailwell.test")
