"""A client domain's spam protection in the partner portal: thresholds saved in order or refused
beside the field that breaks it, back to the defaults, allowed and blocked senders with and without
htmx; another partner's domain and its senders are 404 and stay as they were."""
import html
import re

import pytest

from mailcore.partners.domains import domain_add_for_partner
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from protection.models import DomainPolicy, SenderRule
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def alice_client(client, alice, partner):
    client.force_login(alice)
    return client


@pytest.fixture
def other_partner(db):
    user = UserFactory(email="dora@example.test", account__plan_code="premium")
    return hosting_partner_enable(account=user.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def domain(partner):
    return domain_add_for_partner(partner=partner, name="acme.test")


def text(response) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def url(domain, tail: str = "") -> str:
    return f"/portal/domains/{domain.pk}/protection/{tail}"


def test_the_domain_page_links_to_its_spam_protection(alice_client, domain):
    assert url(domain) in alice_client.get(f"/portal/domains/{domain.pk}/").content.decode()


def test_a_new_domain_shows_the_default_thresholds(alice_client, domain):
    page = alice_client.get(url(domain))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Spam protection for acme.test" in text(page) and "Defaults" in text(page)
    for name, value in (("junk_at", "6.0"), ("quarantine_at", "10.0"), ("refuse_at", "15.0")):
        assert re.search(rf'name="{name}" value="{value}"', body), name


def test_the_partner_saves_thresholds(alice_client, domain):
    response = alice_client.post(url(domain), {"junk_at": "4", "quarantine_at": "8", "refuse_at": "12"}, follow=True)
    assert "Saved. Mail for acme.test arriving from now on uses these thresholds." in text(response)
    policy = DomainPolicy.objects.get(domain=domain)
    assert (policy.junk_at, policy.quarantine_at, policy.refuse_at, policy.greylist) == (4.0, 8.0, 12.0, False)


def test_thresholds_out_of_order_are_refused_beside_the_field_and_nothing_changes(alice_client, domain):
    response = alice_client.post(url(domain), {"junk_at": "9", "quarantine_at": "8", "refuse_at": "12",
                                               "greylist": "on"})
    assert response.status_code == 400
    assert "The Junk threshold (9) must not be above the quarantine threshold (8)." in text(response)
    assert not DomainPolicy.objects.exists()


def test_back_to_the_defaults(alice_client, domain):
    DomainPolicy.objects.create(domain=domain, junk_at=2)
    response = alice_client.post(url(domain), {"reset": "1"}, follow=True)
    assert "acme.test is back to the default thresholds." in text(response)
    assert not DomainPolicy.objects.exists()


def test_the_partner_allows_and_blocks_senders(alice_client, domain):
    added = alice_client.post(url(domain, "senders/"), {"sender": "*.spam.example", "kind": "block"}, follow=True)
    assert "spam.example is always refused for acme.test." in text(added)
    rule = SenderRule.objects.get(domain=domain)
    assert (rule.kind, rule.sender, rule.mailbox) == ("block", "spam.example", None)
    removed = alice_client.post(url(domain, f"senders/{rule.pk}/delete/"), follow=True)
    assert "spam.example removed." in text(removed)
    assert not SenderRule.objects.exists()


def test_with_htmx_only_the_sender_list_comes_back_with_errors_too(alice_client, domain):
    added = alice_client.post(url(domain, "senders/"), {"sender": "friend@partner.example", "kind": "allow"}, **HTMX)
    assert added.content.decode().lstrip().startswith('<section id="sender-rules"')
    assert "friend@partner.example is always let in for acme.test." in text(added)
    refused = alice_client.post(url(domain, "senders/"), {"sender": "no way", "kind": "allow"}, **HTMX)
    assert refused.status_code == 200
    assert "No way is not an address (user@example.com) or a domain (example.com)." in text(refused)
    assert SenderRule.objects.count() == 1


def test_another_partners_domain_is_404_everywhere(alice_client, other_partner):
    theirs = domain_add_for_partner(partner=other_partner, name="theirs.test")
    rule = SenderRule.objects.create(domain=theirs, kind="allow", sender="x.example")
    for method, target in [("get", url(theirs)), ("post", url(theirs)), ("post", url(theirs, "senders/")),
                           ("post", url(theirs, f"senders/{rule.pk}/delete/"))]:
        response = getattr(alice_client, method)(target, {"junk_at": "1", "quarantine_at": "2", "refuse_at": "3",
                                                          "sender": "a.example", "kind": "block"})
        assert response.status_code == 404, target
    assert not DomainPolicy.objects.exists()
    assert list(SenderRule.objects.values_list("sender", flat=True)) == ["x.example"]


def test_a_sender_of_another_domain_is_404_under_ours(alice_client, domain, other_partner):
    theirs = domain_add_for_partner(partner=other_partner, name="theirs.test")
    rule = SenderRule.objects.create(domain=theirs, kind="allow", sender="x.example")
    assert alice_client.post(url(domain, f"senders/{rule.pk}/delete/")).status_code == 404
    assert SenderRule.objects.filter(pk=rule.pk).exists()
