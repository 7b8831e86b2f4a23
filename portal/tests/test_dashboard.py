import re

import pytest

from mailcore.partners.services import hosting_partner_enable
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db


def test_the_dashboard_shows_the_plan_features_quotas_and_counts(client, alice, django_assert_max_num_queries):
    client.force_login(alice)
    with django_assert_max_num_queries(8):
        response = client.get("/")
    html = response.content.decode()
    assert response.status_code == 200
    for text in ("Premium", "Webhooks", "AI agent tools", "10,000", "20 GB", "Unlimited"):
        assert text in html, text


def test_a_partner_sees_its_status(client, charlie):
    hosting_partner_enable(account=charlie.account, status="trial")
    client.force_login(charlie)
    assert "Trial" in client.get("/").content.decode()


def test_pages_carry_security_headers(client, alice):
    client.force_login(alice)
    response = client.get("/")
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_free_account_is_offered_only_what_its_plan_allows_and_told_how_to_get_domains(client, charlie):
    client.force_login(charlie)
    page = client.get("/").content.decode()
    assert "Add your first domain" not in page and "add a domain first" not in page
    assert ('Your own domains come with the hosting partner program: <a href="/portal/partner/apply/">see how to '
            'become a partner</a>.') in page
    # every link the dashboard's own content offers opens for this account (the upgrade pages are the menu's)
    for url in re.findall(r'href="(/portal/[^"#?]*)"', page.split("<main", 1)[1]):
        assert client.get(url).status_code == 200, url
    domains = client.get("/portal/account/domains/").content.decode()
    assert "No domains yet" in domains and 'href="/portal/partner/apply/"' in domains


def test_an_accounts_own_domain_shows_its_dns_records_in_the_portal(client, alice):
    make_domain(alice.account, "example.test")
    client.force_login(alice)
    dashboard = client.get("/").content.decode()
    assert '<a href="/portal/account/domains/">See their DNS records</a>' in dashboard
    assert '<a class="nav__link" href="/portal/account/domains/"' in dashboard or \
        'href="/portal/account/domains/"' in dashboard.split("</nav>")[0]
    page = client.get("/portal/account/domains/").content.decode()
    assert "example.test" in page and "8 of 8 records right" in page
    assert 'value="dkim._domainkey"' in page and 'value="v=DKIM1; k=rsa; p=' in page
    assert page.count('<span class="visually-hidden">Status: </span>Found</span>') == 8


def test_a_working_partner_is_sent_to_its_own_domain_pages(client, charlie):
    hosting_partner_enable(account=charlie.account, status="active")
    client.force_login(charlie)
    response = client.get("/portal/account/domains/")
    assert response.status_code == 302 and response["Location"] == "/portal/domains/"


def _get_started(page: str) -> str:
    return page.split('id="start-heading"', 1)[1].split("</section>", 1)[0]


def test_a_free_accounts_get_started_box_offers_only_what_its_plan_allows(client, charlie):
    client.force_login(charlie)
    steps = _get_started(client.get("/").content.decode())
    assert "Add a domain" not in steps and "Create a mailbox" not in steps and "verified domain" not in steps
    assert "Create an API key" in steps
    assert ('Your own domains and mailboxes come with the <a href="/portal/partner/apply/">hosting partner '
            'program</a>.') in steps


def test_a_pending_partners_get_started_box_waits_for_approval(client, charlie):
    hosting_partner_enable(account=charlie.account, status="pending")
    client.force_login(charlie)
    steps = _get_started(client.get("/").content.decode())
    assert "Wait for partner approval" in steps and "Add a domain" not in steps


@pytest.mark.parametrize("status", ["trial", "active"])
def test_a_working_partners_get_started_box_offers_domains_and_mailboxes(client, charlie, status):
    hosting_partner_enable(account=charlie.account, status=status)
    client.force_login(charlie)
    steps = _get_started(client.get("/").content.decode())
    assert "Add a domain" in steps and "Create a mailbox" in steps and "partner program" not in steps


def test_an_account_with_its_own_domain_keeps_the_domain_steps(client, alice):
    make_domain(alice.account, "example.test")
    client.force_login(alice)
    steps = _get_started(client.get("/").content.decode())
    assert "Add a domain" in steps and "steps__item--done" in steps
