"""The hosting partner API: access, domains with real DNS checks, clients, settings, slot-funded
mailboxes and their life cycle, stats and summary."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from testkit.clients import new_key
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.domains.models import Domain
from mailcore.domains.services import domains_recheck_due
from mailcore.events.models import Event
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.lifecycle import partner_terms_sweep
from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.partners.services import slots_grant
from testkit.dns_records import publish_transport_security
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db

ALL = list(PARTNER_SCOPES)


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def hosting(api, alice, partner):
    """An API client holding a key with every partner scope."""
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=ALL))
    return api


@pytest.fixture
def other(db):
    user = UserFactory(account__plan_code="premium")
    hosting_partner_enable(account=user.account)
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(user, scopes=ALL))
    return client


def events(name):
    return [event.data for event in Event.objects.filter(name=name).order_by("id")]


def publish(zone, name, *, mx="mail.mailwell.test", token=None, spf="v=spf1 mx include:relay.mailwell.test ~all",
            dmarc="v=DMARC1; p=none", dkim=True, prefix="domain-verification", transport=True):
    domain = Domain.objects.get(name=name)
    if mx:
        zone.set(name, "MX", f"10 {mx}")
    zone.set(name, "TXT", *[value for value in (f"{prefix}={token or domain.verification_token}", spf) if value])
    if dmarc:
        zone.set(f"_dmarc.{name}", "TXT", dmarc)
    if dkim:
        zone.set(f"dkim._domainkey.{name}", "TXT", dkim_public_record(dkim_key_for(name)))
    if transport:
        publish_transport_security(zone, name)


def add_domain(hosting, name="acme.test", **fields):
    response = hosting.post("/v1/hosting/domains", {"domain_name": name, **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def verified_domain(hosting, zone, name="acme.test"):
    domain = add_domain(hosting, name)
    publish(zone, name)
    assert hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()["status"] == "verified"
    return domain


# access


def test_the_hosting_api_needs_an_operational_partner(api, alice, charlie):
    api.credentials(HTTP_X_API_KEY=new_key(alice))  # not a partner
    response = api.get("/v1/hosting/domains")
    assert response.status_code == 403 and "not a hosting partner" in response.json()["detail"]
    for status in ("pending", "expired", "suspended"):
        hosting_partner_enable(account=alice.account, status=status)
        api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=ALL))
        assert api.get("/v1/hosting/domains").status_code == 403, status
    hosting_partner_enable(account=alice.account, status="trial")
    assert api.get("/v1/hosting/domains").status_code == 200


@pytest.mark.parametrize("method, path, scope", [
    ("get", "/v1/hosting/domains", "partner:domains:read"),
    ("post", "/v1/hosting/domains", "partner:domains:write"),
    ("get", "/v1/hosting/mailboxes", "partner:mailboxes:read"),
    ("post", "/v1/hosting/mailboxes", "partner:mailboxes:write"),
    ("get", "/v1/hosting/stats", "partner:stats:read"),
    ("get", "/v1/hosting/summary", "partner:stats:read"),
    ("patch", "/v1/hosting/settings", "partner:settings:write"),
])
def test_each_endpoint_needs_its_partner_scope(api, alice, partner, method, path, scope):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=[s for s in ALL if s != scope]))
    response = getattr(api, method)(path, {}, format="json")
    assert response.status_code == 403
    assert response.json() == {"detail": f"This API key lacks the '{scope}' scope."}


def test_no_key_is_401(api, partner):
    assert api.get("/v1/hosting/domains").status_code == 401


# domains


def test_adding_a_domain_returns_the_records_unchecked_and_a_new_client(hosting, partner):
    domain = add_domain(hosting, "Acme.TEST")
    assert (domain["domain_name"], domain["status"], domain["is_verified"], domain["mailserver_added"]) == (
        "acme.test", "pending", False, True)
    assert "verified_at" not in domain
    records = domain["dns_records"]
    assert [(r["type"], r["host"]) for r in records] == [
        ("MX", "@"), ("TXT", "@"), ("TXT", "@"), ("TXT", "_dmarc"), ("TXT", "dkim._domainkey"),
        ("TXT", "_mta-sts"), ("CNAME", "mta-sts"), ("TXT", "_smtp._tls"), ("CNAME", "track")]
    assert records[0]["value"] == "10 mail.mailwell.test"
    assert records[1]["value"] == f"domain-verification={Domain.objects.get().verification_token}"
    assert records[2]["value"] == "v=spf1 mx include:relay.mailwell.test ~all"
    assert records[4]["value"].startswith("v=DKIM1; k=rsa; p=MII")
    assert all((r["ok"], r["found_value"], r["reason"]) == (None, None, None) for r in records)
    assert all(r["description"] for r in records)
    client = PartnerClient.objects.get(pk=domain["client_id"])
    assert client.name == "acme.test" and client.partner == partner
    assert events("partner_domain.added") == [{"domain_id": domain["id"], "domain": "acme.test", "client_id": client.pk}]


def test_the_dkim_key_is_generated_once_per_name_and_reused(hosting, partner):
    first = add_domain(hosting)["dns_records"][4]["value"]
    hosting.delete(f"/v1/hosting/domains/{Domain.objects.get().pk}")
    again = add_domain(hosting)["dns_records"][4]["value"]
    assert first == again


def test_a_domain_for_an_existing_client(hosting, partner):
    client = hosting.post("/v1/hosting/clients", {"name": "Bakery"}, format="json").json()
    domain = add_domain(hosting, client_id=client["id"])
    assert domain["client_id"] == client["id"]
    assert hosting.post("/v1/hosting/domains", {"domain_name": "x.test", "client_id": 99999}, format="json").status_code == 404


@pytest.mark.parametrize("name", ["not a domain", "nodot", "-bad.test", "bad-.test", "a..test", "exa_mple.test",
                                  "x" * 64 + ".test", "123.456"])
def test_an_invalid_name_is_400(hosting, partner, name):
    response = hosting.post("/v1/hosting/domains", {"domain_name": name}, format="json")
    assert response.status_code == 400, name
    assert Domain.objects.count() == 0


def test_an_internationalised_name_is_stored_as_idna(hosting, partner):
    assert add_domain(hosting, "bücher.test")["domain_name"] == "xn--bcher-kva.test"


def test_a_name_claimed_by_any_account_is_409(hosting, partner, other):
    add_domain(other, "taken.test")
    response = hosting.post("/v1/hosting/domains", {"domain_name": "TAKEN.test"}, format="json")
    assert response.status_code == 409
    assert Domain.objects.count() == 1


def test_an_unverified_claim_lapses_after_a_week_and_another_partner_takes_the_name(hosting, partner, other,
                                                                                     dns_zone):
    """A claim nobody verifies holds the name for 7 days: the background checks then stop, and another
    partner's claim takes the name (the lapsed claim is gone from its first owner's list)."""
    squatter = add_domain(other, "bakery.test")
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert hosting.post("/v1/hosting/domains", {"domain_name": "bakery.test"}, format="json").status_code == 409
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        domains_recheck_due()
        assert Domain.objects.get(pk=squatter["id"]).next_check_at is None  # checks stopped
        assert domains_recheck_due() == 0
        taken = hosting.post("/v1/hosting/domains", {"domain_name": "bakery.test"}, format="json")
        assert taken.status_code == 201, taken.content
        assert [d["domain_name"] for d in other.get("/v1/hosting/domains").json()] == []
        publish(dns_zone, "bakery.test")
        verified = hosting.post(f"/v1/hosting/domains/{taken.json()['id']}/verify").json()
        assert verified["is_verified"] is True


def test_a_lapsed_claim_whose_dns_now_proves_its_holder_is_kept_and_the_newcomer_gets_409(hosting, partner, other,
                                                                                           dns_zone):
    """Past its week, a claim is given up only when its holder's DNS still does not prove it: the
    owner who published the records late keeps the name, verified, and the newcomer is told 409."""
    holder = add_domain(other, "bakery.test")
    publish(dns_zone, "bakery.test")  # the real owner's records, published after the week
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        refused = hosting.post("/v1/hosting/domains", {"domain_name": "bakery.test"}, format="json")
        assert refused.status_code == 409 and refused.json()["detail"] == "bakery.test is already claimed"
        [kept] = other.get("/v1/hosting/domains").json()
        assert (kept["id"], kept["status"], kept["is_verified"]) == (holder["id"], "verified", True)
        assert hosting.get("/v1/hosting/domains").json() == []
        assert [e["domain"] for e in events("partner_domain.verified")] == ["bakery.test"]
        assert hosting.post("/v1/hosting/domains", {"domain_name": "bakery.test"}, format="json").status_code == 409


@pytest.mark.django_db(transaction=True)  # the takeover runs on its own connection and commits
def test_a_holders_verify_racing_a_takeover_of_its_lapsed_claim_answers_409(plans, hosting, partner, other, dns_zone,
                                                                              monkeypatch):
    """While the holder's verify is looking its records up, another partner takes the lapsed name:
    the verify answers 409 saying so (it used to re-insert the deleted row and fail with a 500)."""
    from django.db import connections
    holder = add_domain(other, "bakery.test")
    taken = {}

    def resolve(request, handler, _resolve=dns_zone.resolve):
        if not taken:
            taken["response"] = None
            try:
                taken["response"] = hosting.post("/v1/hosting/domains", {"domain_name": "bakery.test"},
                                                 format="json")
            finally:
                connections.close_all()
        return _resolve(request, handler)

    with time_machine.travel(timezone.now() + timedelta(days=8)):
        monkeypatch.setattr(dns_zone, "resolve", resolve)
        verify = other.post(f"/v1/hosting/domains/{holder['id']}/verify")

        assert taken["response"].status_code == 201, taken["response"].content
        assert verify.status_code == 409
        assert verify.json()["detail"] == ("bakery.test is no longer claimed by this account: its claim lapsed "
                                           "unverified and another account claimed the name")
        assert list(Domain.objects.values_list("pk", "account")) == [(taken["response"].json()["id"],
                                                                      partner.account.pk)]
        assert other.get("/v1/hosting/domains").json() == []


def test_a_verified_domain_never_lapses(hosting, partner, other, dns_zone):
    domain = add_domain(other, "kept.test")
    publish(dns_zone, "kept.test")
    assert other.post(f"/v1/hosting/domains/{domain['id']}/verify").json()["is_verified"] is True
    with time_machine.travel(timezone.now() + timedelta(days=30)):
        assert hosting.post("/v1/hosting/domains", {"domain_name": "kept.test"}, format="json").status_code == 409


def test_the_domain_limit_is_two_then_add_ons_raise_it(hosting, partner):
    add_domain(hosting, "one.test")
    add_domain(hosting, "two.test")
    response = hosting.post("/v1/hosting/domains", {"domain_name": "three.test"}, format="json")
    assert response.status_code == 402 and "domain limit is 2" in response.json()["detail"]
    partner.extra_domain_slots = 1
    partner.save()
    add_domain(hosting, "three.test")


def test_verify_with_correct_records_verifies_once(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    publish(dns_zone, "acme.test")
    verified = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert (verified["status"], verified["is_verified"], verified["dns_records"]) == ("verified", True, None)
    assert verified["verified_at"].endswith("Z")
    hosting.post(f"/v1/hosting/domains/{domain['id']}/verify")
    assert len(events("partner_domain.verified")) == 1
    [generic] = events("domain.verified")
    assert generic["checks"] == {"mx": True, "spf": True, "dkim": True, "dmarc": True}


def test_the_ownership_record_carries_no_brand_and_a_platform_can_name_it(hosting, partner, settings):
    record = add_domain(hosting)["dns_records"][1]
    assert record["value"].startswith("domain-verification=") and "mailwell" not in record["value"].lower()
    settings.DOMAIN_VERIFY_PREFIX = "acmehost-verify"
    record = add_domain(hosting, "other.test")["dns_records"][1]
    assert record["value"] == f"acmehost-verify={Domain.objects.get(name='other.test').verification_token}"


def test_a_domain_that_published_the_old_branded_token_still_verifies(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    publish(dns_zone, "acme.test", prefix="mailwell-verify")
    verified = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert (verified["status"], verified["dns_records"]) == ("verified", None)


def test_a_token_under_an_unknown_prefix_does_not_verify(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    publish(dns_zone, "acme.test", prefix="other-verify")
    failed = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert failed["status"] == "failed"
    assert failed["dns_records"][1]["reason"] == "no verification TXT record"


def test_stats_count_failed_domains_apart_from_pending_ones(hosting, partner, dns_zone):
    failing = add_domain(hosting, "failing.test")
    add_domain(hosting, "waiting.test")
    assert hosting.post(f"/v1/hosting/domains/{failing['id']}/verify").json()["status"] == "failed"
    stats = hosting.get("/v1/hosting/stats").json()
    assert (stats["domains_total"], stats["domains_pending"], stats["domains_failed"], stats["domains_verified"]) == (
        2, 1, 1, 0)


def test_verify_reports_each_broken_record_with_its_reason(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    publish(dns_zone, "acme.test", mx="mx.elsewhere.test", token="wrong", spf="v=spf1 mx ~all", dmarc=None, dkim=False,
            transport=False)
    dns_zone.set("dkim._domainkey.acme.test", "TXT", "v=DKIM1; k=rsa; p=AAAAB3NzaC1yc2E")
    failed = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert failed["status"] == "failed" and failed["is_verified"] is False
    reasons = [(r["ok"], r["reason"]) for r in failed["dns_records"]]
    assert reasons == [
        (False, "MX points to mx.elsewhere.test, expected mail.mailwell.test"),
        (False, "the verification token does not match"),
        (False, "SPF lacks include:relay.mailwell.test"),
        (False, "no DMARC record"),
        (False, "DKIM key does not match"),
        (False, "no MTA-STS record"),
        (False, "no CNAME for the MTA-STS policy host; expected webmail.mailwell.test"),
        (False, "no TLS-RPT record"),
        (False, "optional, not published: tracked links use the platform's host"),
    ]
    assert failed["dns_records"][0]["found_value"] == "10 mx.elsewhere.test."
    assert len(events("partner_domain.verification_failed")) == 1


def test_missing_records_and_two_spf_records_have_their_own_reasons(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    dns_zone.set("acme.test", "TXT", "v=spf1 mx ~all", "v=spf1 include:relay.mailwell.test ~all")
    failed = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert [r["reason"] for r in failed["dns_records"]] == [
        "no MX record", "no verification TXT record", "two SPF records; merge them into one", "no DMARC record",
        "no DKIM record", "no MTA-STS record", "no CNAME for the MTA-STS policy host; expected webmail.mailwell.test",
        "no TLS-RPT record",
        "optional, not published: tracked links use the platform's host"]


def test_a_verified_domain_with_wrong_spf_keeps_its_records(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    publish(dns_zone, "acme.test", spf=None)
    verified = hosting.post(f"/v1/hosting/domains/{domain['id']}/verify").json()
    assert verified["status"] == "verified"
    assert [(r["type"], r["ok"]) for r in verified["dns_records"]][2] == ("TXT", False)
    assert verified["dns_records"][2]["reason"] == "no SPF record"
    assert hosting.get(f"/v1/hosting/domains/{domain['id']}").json()["dns_records"] is not None


def test_pending_domains_are_rechecked_in_the_background_and_reported_after_three_failures(hosting, partner, dns_zone):
    domain = add_domain(hosting)
    moment = timezone.now()
    for _ in range(3):
        moment += timedelta(hours=7)
        with time_machine.travel(moment):
            assert domains_recheck_due() == 1
    assert len(events("partner_domain.verification_failed")) == 3
    [report] = events("domain.verification_failed")
    assert (report["domain"], report["attempts"]) == ("acme.test", 3)
    with time_machine.travel(moment + timedelta(hours=7)):
        publish(dns_zone, "acme.test")
        assert domains_recheck_due() == 1
    assert Domain.objects.get().status == "verified"
    assert len(events("domain.verification_failed")) == 1


def test_delete_is_409_while_mailboxes_remain(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    slots_grant(partner=partner, count=1)
    mailbox = hosting.post("/v1/hosting/mailboxes", {"domain_id": domain["id"], "local_part": "ann",
                                                     "password": "long enough", "plan_id": "pro"}, format="json").json()
    response = hosting.delete(f"/v1/hosting/domains/{domain['id']}")
    assert response.status_code == 409 and Domain.objects.count() == 1
    hosting.delete(f"/v1/hosting/mailboxes/{mailbox['id']}")
    assert hosting.delete(f"/v1/hosting/domains/{domain['id']}").status_code == 204
    assert Domain.objects.count() == 0


def test_another_partners_domain_is_404(hosting, partner, other):
    domain = add_domain(other, "theirs.test")
    for method, path in [("get", f"/v1/hosting/domains/{domain['id']}"), ("delete", f"/v1/hosting/domains/{domain['id']}"),
                         ("post", f"/v1/hosting/domains/{domain['id']}/verify")]:
        assert getattr(hosting, method)(path).status_code == 404
    assert hosting.get("/v1/hosting/domains").json() == []


# clients and settings


def test_clients_list_create_update_delete_with_counts(hosting, partner, dns_zone):
    created = hosting.post("/v1/hosting/clients", {"name": "Bakery"}, format="json")
    assert created.status_code == 201
    client = created.json()
    assert (client["name"], client["lapse_action_override"], client["domain_count"], client["mailbox_count"]) == (
        "Bakery", None, 0, 0)
    domain = add_domain(hosting, client_id=client["id"])
    publish(dns_zone, "acme.test")
    hosting.post(f"/v1/hosting/domains/{domain['id']}/verify")
    slots_grant(partner=partner, count=2)
    for local in ("a", "b"):
        hosting.post("/v1/hosting/mailboxes", {"domain_id": domain["id"], "local_part": local,
                                               "password": "long enough", "plan_id": "pro"}, format="json")
    listed = {c["name"]: c for c in hosting.get("/v1/hosting/clients").json()}
    assert (listed["Bakery"]["domain_count"], listed["Bakery"]["mailbox_count"]) == (1, 2)
    patched = hosting.patch(f"/v1/hosting/clients/{client['id']}", {"name": "Bakery Ltd",
                                                                    "lapse_action_override": "downgrade_free"},
                            format="json").json()
    assert (patched["name"], patched["lapse_action_override"]) == ("Bakery Ltd", "downgrade_free")
    cleared = hosting.patch(f"/v1/hosting/clients/{client['id']}", {"lapse_action_override": None}, format="json")
    assert cleared.json()["lapse_action_override"] is None
    assert hosting.patch(f"/v1/hosting/clients/{client['id']}", {"lapse_action_override": "delete"},
                         format="json").status_code == 422
    assert hosting.delete(f"/v1/hosting/clients/{client['id']}").status_code == 409  # it has a domain
    empty = hosting.post("/v1/hosting/clients", {"name": "Empty"}, format="json").json()
    assert hosting.delete(f"/v1/hosting/clients/{empty['id']}").status_code == 204


def test_settings_read_and_update(hosting, partner):
    assert hosting.get("/v1/hosting/settings").json() == {"default_client_lapse_action": "suspend"}
    updated = hosting.patch("/v1/hosting/settings", {"default_client_lapse_action": "downgrade_free"}, format="json")
    assert updated.json() == {"default_client_lapse_action": "downgrade_free"}
    bad = hosting.patch("/v1/hosting/settings", {"default_client_lapse_action": "explode"}, format="json")
    assert bad.status_code == 422
    unchanged = hosting.patch("/v1/hosting/settings", {}, format="json")  # PATCH: only what is given changes
    assert (unchanged.status_code, unchanged.json()) == (200, {"default_client_lapse_action": "downgrade_free"})
    partner.refresh_from_db()
    assert partner.default_client_lapse_action == "downgrade_free"


# mailboxes


def create_mailbox(hosting, domain, local="ann", **fields):
    return hosting.post("/v1/hosting/mailboxes", {"domain_id": domain["id"], "local_part": local,
                                                  "password": "long enough", "plan_id": "pro", **fields}, format="json")


@pytest.mark.parametrize("currency, rate_field, other_field, rate", [
    ("usd", "monthly_rate_usd", "monthly_rate_ngn", 5.0), ("ngn", "monthly_rate_ngn", "monthly_rate_usd", 7500.0)])
def test_a_partner_sees_its_mailboxes_rate_only_in_its_own_currency(hosting, partner, dns_zone, currency,
                                                                     rate_field, other_field, rate):
    partner.billing_currency = currency
    partner.save(update_fields=["billing_currency"])
    slots_grant(partner=partner, count=1)
    created = create_mailbox(hosting, verified_domain(hosting, dns_zone), plan_id="premium").json()

    for record in (created, hosting.get(f"/v1/hosting/mailboxes/{created['id']}").json(),
                   hosting.get("/v1/hosting/mailboxes").json()[0]):
        assert record[rate_field] == rate
        assert other_field not in record


def test_a_slot_funds_a_mailbox_provisioned_with_the_plans_quota(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    slots_grant(partner=partner, count=1)
    response = create_mailbox(hosting, domain, plan_id="premium", display_name="Ann")
    assert response.status_code == 201, response.json()
    record = response.json()
    assert set(record) == {"id", "email_address", "domain", "plan_type", "status", "is_trial", "monthly_rate_usd",
                           "expires_at", "mailserver_provisioned", "created_at"}
    assert (record["email_address"], record["domain"], record["plan_type"], record["status"], record["is_trial"],
            record["mailserver_provisioned"], record["monthly_rate_usd"]) == (
        "ann@acme.test", "acme.test", "premium", "active", False, True, 5.0)
    mailbox = Mailbox.objects.get(address="ann@acme.test")
    assert mailbox.quota_mb == 20480 and mailbox.is_active
    assert MailboxSlot.objects.get().status == "assigned"
    assert events("partner_mailbox.created")[0]["email_address"] == "ann@acme.test"
    assert hosting.get(f"/v1/hosting/mailboxes/{record['id']}").json()["email_address"] == "ann@acme.test"


def test_mailbox_creation_errors(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    pending = add_domain(hosting, "pending.test")
    assert create_mailbox(hosting, pending).status_code == 400  # unverified domain
    assert create_mailbox(hosting, domain).status_code == 402  # no slot
    slots_grant(partner=partner, count=1)
    assert create_mailbox(hosting, domain, password="short").status_code == 422
    assert create_mailbox(hosting, domain, local=".bad").status_code == 422
    assert create_mailbox(hosting, domain, plan_id="free").status_code == 422
    assert create_mailbox(hosting, domain, funding_mode="pay_as_you_go", return_url="https://x.test/r").status_code == 400
    assert PartnerMailbox.objects.count() == 0 and MailboxSlot.objects.get().status == "unused"
    assert create_mailbox(hosting, domain).status_code == 201
    slots_grant(partner=partner, count=1)
    assert create_mailbox(hosting, domain).status_code == 409


def test_a_trial_partner_uses_its_trial_allowance(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    partner.status, partner.trial_ends_at, partner.trial_mailbox_allowance = "trial", timezone.now() + timedelta(days=14), 1
    partner.save()
    first = create_mailbox(hosting, domain, local="one").json()
    assert (first["status"], first["is_trial"]) == ("trial", True)
    assert create_mailbox(hosting, domain, local="two").status_code == 402


def test_list_filters_by_status(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    slots_grant(partner=partner, count=2)
    create_mailbox(hosting, domain, local="a")
    b = create_mailbox(hosting, domain, local="b").json()
    PartnerMailbox.objects.filter(pk=b["id"]).update(status="suspended")
    assert [m["email_address"] for m in hosting.get("/v1/hosting/mailboxes", {"status": "suspended"}).json()] == [
        "b@acme.test"]
    assert len(hosting.get("/v1/hosting/mailboxes").json()) == 2
    assert hosting.get("/v1/hosting/mailboxes", {"status": "nope"}).status_code == 422


def test_renew_consumes_a_slot_term_from_the_pool(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    slots_grant(partner=partner, count=1, plan_type="pro")
    created = create_mailbox(hosting, domain).json()
    before = PartnerMailbox.objects.get().expires_at
    refused = hosting.post(f"/v1/hosting/mailboxes/{created['id']}/renew")
    assert refused.status_code == 402 and "slot" in refused.json()["detail"]
    assert PartnerMailbox.objects.get().expires_at == before and not events("partner_mailbox.renewed")
    slots_grant(partner=partner, count=1, plan_type="premium")  # another plan's slot does not fund it
    assert hosting.post(f"/v1/hosting/mailboxes/{created['id']}/renew").status_code == 402
    slots_grant(partner=partner, count=1, plan_type="pro", term_days=90)
    renewed = hosting.post(f"/v1/hosting/mailboxes/{created['id']}/renew").json()
    assert PartnerMailbox.objects.get().expires_at == before + timedelta(days=90)
    assert renewed["status"] == "active"
    assert len(events("partner_mailbox.renewed")) == 1
    assert list(MailboxSlot.objects.filter(plan_type="pro").order_by("id").values_list("status", flat=True)) == [
        "expired", "assigned"]  # the first term is used up, the new one funds the mailbox


def test_delete_frees_the_slot_and_keeps_the_mail_account_disabled(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    slots_grant(partner=partner, count=1)
    created = create_mailbox(hosting, domain).json()
    assert hosting.delete(f"/v1/hosting/mailboxes/{created['id']}").status_code == 204
    assert PartnerMailbox.objects.count() == 0
    assert MailboxSlot.objects.get().status == "unused"
    mailbox = Mailbox.objects.get(address="ann@acme.test")
    assert mailbox.is_active is False  # data kept, locked out
    assert events("partner_mailbox.deleted")[0]["email_address"] == "ann@acme.test"
    again = create_mailbox(hosting, domain)  # the same address comes back with its mail
    assert again.status_code == 201 and Mailbox.objects.get(address="ann@acme.test").pk == mailbox.pk


def test_another_partners_mailbox_is_404(hosting, partner, other, dns_zone):
    domain = verified_domain(other, dns_zone, "theirs.test")
    other_partner = Domain.objects.get(name="theirs.test").account.partner
    slots_grant(partner=other_partner, count=1)
    theirs = create_mailbox(other, domain).json()
    for method, path in [("get", f"/v1/hosting/mailboxes/{theirs['id']}"),
                         ("delete", f"/v1/hosting/mailboxes/{theirs['id']}"),
                         ("post", f"/v1/hosting/mailboxes/{theirs['id']}/renew")]:
        assert getattr(hosting, method)(path).status_code == 404
    assert create_mailbox(hosting, domain).status_code == 404  # their domain


# life cycle


def make_running_mailbox(hosting, partner, zone, local="ann"):
    domain = Domain.objects.filter(name="acme.test").first()
    domain_record = {"id": domain.pk} if domain else verified_domain(hosting, zone)
    slots_grant(partner=partner, count=1)
    return PartnerMailbox.objects.get(pk=create_mailbox(hosting, domain_record, local=local).json()["id"])


def test_expiring_soon_fires_once_about_seven_days_ahead(hosting, partner, dns_zone):
    running = make_running_mailbox(hosting, partner, dns_zone)
    with time_machine.travel(running.expires_at - timedelta(days=8)):
        partner_terms_sweep()
    assert events("partner_mailbox.expiring_soon") == []
    with time_machine.travel(running.expires_at - timedelta(days=6)):
        partner_terms_sweep()
        partner_terms_sweep()
    assert len(events("partner_mailbox.expiring_soon")) == 1


def test_a_trial_ending_is_announced_once(hosting, partner):
    partner.status, partner.trial_ends_at = "trial", timezone.now() + timedelta(days=6)
    partner.save()
    partner_terms_sweep()
    partner_terms_sweep()
    assert events("partner_trial.expiring_soon") == [
        {"trial_ends_at": partner.trial_ends_at.isoformat().replace("+00:00", "Z")}]
    with time_machine.travel(partner.trial_ends_at + timedelta(seconds=1)):
        partner_terms_sweep()
    partner.refresh_from_db()
    assert partner.status == "expired"


def test_a_lapse_suspends_by_default_and_locks_the_mailbox_out(hosting, partner, dns_zone, alice):
    running = make_running_mailbox(hosting, partner, dns_zone)
    with time_machine.travel(running.expires_at + timedelta(seconds=1)):
        assert partner_terms_sweep()["lapsed"] == 1
    running.refresh_from_db()
    running.mailbox.refresh_from_db()
    assert running.status == "suspended" and running.mailbox.is_active is False
    from django.db import connection

    with connection.cursor() as cursor:  # Dovecot's view no longer lets the account log in
        cursor.execute("SELECT count(*) FROM dovecot_users WHERE username = %s", [running.mailbox.address])
        assert cursor.fetchone()[0] == 0
    send = hosting.post("/mail/send", {"from_email": running.mailbox.address, "to": ["x@y.test"], "body_text": "x"},
                        format="json", HTTP_X_API_KEY=new_key(alice))
    assert send.status_code == 403
    slots_grant(partner=partner, count=1)  # a renewal is paid with a slot term
    renewed = hosting.post(f"/v1/hosting/mailboxes/{running.pk}/renew").json()
    assert renewed["status"] == "active" and Mailbox.objects.get(pk=running.mailbox_id).is_active


def test_the_clients_override_downgrades_to_free_and_keeps_it_reachable(hosting, partner, dns_zone):
    running = make_running_mailbox(hosting, partner, dns_zone)
    client = running.mailbox.domain.client
    client.lapse_action_override = "downgrade_free"
    client.save()
    with time_machine.travel(running.expires_at + timedelta(seconds=1)):
        partner_terms_sweep()
    running.refresh_from_db()
    running.mailbox.refresh_from_db()
    assert running.status == "expired"
    assert running.mailbox.is_active and running.mailbox.effective_plan.code == "free"


def test_the_accounts_default_applies_without_an_override(hosting, partner, dns_zone):
    hosting.patch("/v1/hosting/settings", {"default_client_lapse_action": "downgrade_free"}, format="json")
    running = make_running_mailbox(hosting, partner, dns_zone)
    with time_machine.travel(running.expires_at + timedelta(seconds=1)):
        partner_terms_sweep()
    running.refresh_from_db()
    assert running.status == "expired" and running.mailbox.is_active


# stats and summary


def test_stats_are_correct(hosting, partner, dns_zone):
    domain = verified_domain(hosting, dns_zone)
    add_domain(hosting, "pending.test")
    slots_grant(partner=partner, count=3)
    create_mailbox(hosting, domain, local="a", plan_id="pro")
    b = create_mailbox(hosting, domain, local="b", plan_id="premium").json()
    PartnerMailbox.objects.filter(pk=b["id"]).update(status="suspended")
    stats = hosting.get("/v1/hosting/stats").json()
    assert {k: v for k, v in stats.items() if k != "pending_domain_setup"} == {
        "mailboxes_total": 2, "mailboxes_by_status": {"active": 1, "suspended": 1},
        "mailboxes_by_plan": {"pro": 1, "premium": 1}, "slots_unused": 1, "slots_assigned": 2, "slots_expired": 0,
        "domains_total": 2, "domains_verified": 1, "domains_pending": 1, "domains_failed": 0, "domain_limit": 2, "extra_storage_mb": 0}
    [pending] = stats["pending_domain_setup"]
    assert (pending["domain_name"], pending["status"], len(pending["dns_records"])) == ("pending.test", "pending", 9)
    summary = hosting.get("/v1/hosting/summary").json()
    assert (summary["status"], summary["clients_total"], summary["domains_total"], summary["mailboxes_total"],
            summary["slots_unused"]) == ("active", 2, 2, 2, 1)


def bulk_mailboxes(partner, count):
    from testkit.factories import make_mailbox

    domain = Domain.objects.create(account=partner.account, name=f"bulk{count}.test", verification_token="t",
                                   status="pending", dns_check=[
        {"type": "MX", "host": "@", "value": "10 mail.mailwell.test", "description": "Routes incoming mail",
         "ok": None, "found_value": None, "reason": None}])
    for n in range(count):
        mailbox = make_mailbox(partner.account, f"m{n}@bulk{count}.test")
        PartnerMailbox.objects.create(partner=partner, mailbox=mailbox, plan_type="pro", status="active",
                                      expires_at=timezone.now() + timedelta(days=30))
    slots_grant(partner=partner, count=count)
    return domain


@pytest.mark.parametrize("size", [1, 200])
def test_stats_and_summary_take_a_fixed_number_of_queries(hosting, partner, size, django_assert_num_queries):
    bulk_mailboxes(partner, size)
    # the same count for 1 and for 200 mailboxes (key lookup and usage included)
    with django_assert_num_queries(9):
        assert hosting.get("/v1/hosting/stats").json()["mailboxes_total"] == size
    with django_assert_num_queries(5):
        assert hosting.get("/v1/hosting/summary").json()["mailboxes_total"] == size
