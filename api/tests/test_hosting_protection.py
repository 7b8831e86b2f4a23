"""/v1/hosting/domains/{id}/protection and /sender-rules: a partner sets a client domain's spam
thresholds and its allowed and blocked senders; another partner's domain does not exist for it."""
import pytest

from billing.services.mailboxes import partner_mailbox_open
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable, slots_grant
from protection.models import DomainPolicy, SenderRule
from testkit.clients import key_client
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db

ALL = list(PARTNER_SCOPES)


def partner_domain(user, name: str):
    partner = hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)
    domain = make_domain(user.account, name)
    slots_grant(partner=partner, count=1)
    partner_mailbox_open(partner=partner, domain=domain, local_part="ann", password="mailbox-pass-1", plan_id="pro")
    return domain


@pytest.fixture
def acme(alice):
    return partner_domain(alice, "acme.test")


@pytest.fixture
def hosting(alice, acme):
    return key_client(alice, ALL)


@pytest.fixture
def charlies_domain(charlie):
    return partner_domain(charlie, "charlie.test")


def test_a_domain_without_settings_shows_the_defaults(hosting, acme):
    response = hosting.get(f"/v1/hosting/domains/{acme.pk}/protection")
    assert response.status_code == 200
    assert response.json() == {"domain": "acme.test", "junk_at": 6.0, "quarantine_at": 10.0, "refuse_at": 15.0,
                               "greylist": True, "is_default": True}


def test_the_partner_sets_thresholds_and_reads_them_back(hosting, acme):
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection",
                             {"junk_at": 4, "quarantine_at": 8.5, "greylist": False}, format="json")
    assert response.status_code == 200
    expected = {"domain": "acme.test", "junk_at": 4.0, "quarantine_at": 8.5, "refuse_at": 15.0, "greylist": False,
                "is_default": False}
    assert response.json() == expected
    assert hosting.get(f"/v1/hosting/domains/{acme.pk}/protection").json() == expected


def test_it_refuses_thresholds_out_of_order_with_field_errors_and_changes_nothing(hosting, acme):
    hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection", {"junk_at": 5}, format="json")
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection",
                             {"junk_at": 12, "refuse_at": 9}, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {
        "junk_at": ["the Junk threshold (12) must not be above the quarantine threshold (10)"],
        "refuse_at": ["the quarantine threshold (10) must not be above the refusal threshold (9)"],
    }
    policy = DomainPolicy.objects.get(domain=acme)
    assert (policy.junk_at, policy.quarantine_at, policy.refuse_at) == (5.0, 10.0, 15.0)


def test_a_refusal_threshold_below_the_quarantine_threshold_names_refuse_at(hosting, acme):
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection", {"refuse_at": 7}, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {
        "refuse_at": ["the quarantine threshold (10) must not be above the refusal threshold (7)"]}
    assert not DomainPolicy.objects.filter(domain=acme).exists()


def test_a_score_outside_the_range_is_a_field_error(hosting, acme):
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection", {"junk_at": -1}, format="json")
    assert response.status_code == 422
    assert response.json()["errors"] == {"junk_at": ["must be between 0 and 100"]}


def test_equal_thresholds_are_allowed(hosting, acme):
    response = hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection",
                             {"junk_at": 10, "quarantine_at": 10, "refuse_at": 10}, format="json")
    assert response.status_code == 200
    assert (response.json()["junk_at"], response.json()["refuse_at"]) == (10.0, 10.0)


def test_reset_goes_back_to_the_defaults(hosting, acme):
    hosting.patch(f"/v1/hosting/domains/{acme.pk}/protection", {"junk_at": 3}, format="json")
    response = hosting.delete(f"/v1/hosting/domains/{acme.pk}/protection")
    assert response.status_code == 200
    assert (response.json()["junk_at"], response.json()["is_default"]) == (6.0, True)


def test_the_partner_allows_and_blocks_senders_for_a_client_domain(hosting, acme):
    allowed = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules",
                           {"kind": "allow", "sender": " Billing@Supplier.Example "}, format="json")
    blocked = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules",
                           {"kind": "block", "sender": "*.spammy.example"}, format="json")
    assert (allowed.status_code, blocked.status_code) == (201, 201)
    listed = hosting.get(f"/v1/hosting/domains/{acme.pk}/sender-rules").json()
    assert [(rule["kind"], rule["sender"]) for rule in listed] == [("allow", "billing@supplier.example"),
                                                                   ("block", "spammy.example")]
    assert hosting.delete(f"/v1/hosting/domains/{acme.pk}/sender-rules/{allowed.json()['id']}").status_code == 204
    assert list(SenderRule.objects.filter(domain=acme).values_list("sender", flat=True)) == ["spammy.example"]


def test_adding_the_same_rule_twice_keeps_one(hosting, acme):
    first = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "block", "sender": "x.example"},
                         format="json")
    again = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "block", "sender": "X.example"},
                         format="json")
    assert again.json()["id"] == first.json()["id"]
    assert SenderRule.objects.filter(domain=acme).count() == 1


def test_it_refuses_an_invalid_sender_or_the_opposite_rule(hosting, acme):
    hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "block", "sender": "x.example"},
                 format="json")
    invalid = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "allow", "sender": "not a domain"},
                           format="json")
    opposite = hosting.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "allow", "sender": "x.example"},
                            format="json")
    assert (invalid.status_code, opposite.status_code) == (422, 422)
    assert invalid.json()["errors"] == {
        "sender": ["not a domain is not an address (user@example.com) or a domain (example.com)"]}
    assert opposite.json()["errors"] == {"sender": ["x.example is already blocked; remove that rule first"]}
    assert list(SenderRule.objects.values_list("kind", "sender")) == [("block", "x.example")]


def test_another_partners_domain_is_not_found(hosting, charlies_domain):
    rule = SenderRule.objects.create(domain=charlies_domain, kind="block", sender="x.example")
    base = f"/v1/hosting/domains/{charlies_domain.pk}"
    assert hosting.get(f"{base}/protection").status_code == 404
    assert hosting.patch(f"{base}/protection", {"junk_at": 1}, format="json").status_code == 404
    assert hosting.get(f"{base}/sender-rules").status_code == 404
    assert hosting.post(f"{base}/sender-rules", {"kind": "allow", "sender": "a.example"},
                        format="json").status_code == 404
    assert hosting.delete(f"{base}/sender-rules/{rule.pk}").status_code == 404
    assert not DomainPolicy.objects.filter(domain=charlies_domain).exists()
    assert list(SenderRule.objects.values_list("sender", flat=True)) == ["x.example"]


def test_a_rule_of_another_domain_is_not_found_under_ours(hosting, acme, charlies_domain):
    rule = SenderRule.objects.create(domain=charlies_domain, kind="block", sender="x.example")
    assert hosting.delete(f"/v1/hosting/domains/{acme.pk}/sender-rules/{rule.pk}").status_code == 404
    assert SenderRule.objects.filter(pk=rule.pk).exists()


def test_reading_needs_the_domains_read_scope_and_writing_the_write_scope(alice, acme):
    reader = key_client(alice, ["partner:domains:read"])
    assert reader.get(f"/v1/hosting/domains/{acme.pk}/protection").status_code == 200
    assert reader.patch(f"/v1/hosting/domains/{acme.pk}/protection", {"junk_at": 1}, format="json").status_code == 403
    assert reader.post(f"/v1/hosting/domains/{acme.pk}/sender-rules", {"kind": "allow", "sender": "a.example"},
                       format="json").status_code == 403
    assert not DomainPolicy.objects.exists() and not SenderRule.objects.exists()
