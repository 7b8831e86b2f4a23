"""The portal's hosting partner pages: domains with the DNS wizard checked against a real DNS server,
clients, the partner figures on the dashboard, becoming a partner, and tenant isolation."""
import re
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone

from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.domains.models import Domain
from mailcore.domains.services import domain_mark_verified
from mailcore.partners.domains import domain_add_for_partner
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.services import client_create, slots_grant
from testkit.dns_records import publish_transport_security
from testkit.factories import UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
DOMAINS = "/portal/domains/"
CLIENTS = "/portal/clients/"
APPLY = "/portal/partner/apply/"


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


def publish(zone, domain, *, mx="mail.mailwell.test", spf="v=spf1 mx include:relay.mailwell.test ~all"):
    """The records as a partner's client would publish them at their DNS provider."""
    zone.set(domain.name, "MX", f"10 {mx}")
    zone.set(domain.name, "TXT", f"{settings.DOMAIN_VERIFY_PREFIX}={domain.verification_token}", spf)
    zone.set(f"_dmarc.{domain.name}", "TXT", "v=DMARC1; p=none")
    zone.set(f"dkim._domainkey.{domain.name}", "TXT", dkim_public_record(dkim_key_for(domain.name)))
    publish_transport_security(zone, domain.name)


def mailbox_on(partner, domain, local_part="ann", plan_id="pro") -> PartnerMailbox:
    domain_mark_verified(domain=domain)
    slots_grant(partner=partner, count=1)
    return partner_mailbox_open(partner=partner, domain=domain, local_part=local_part, password="correct-horse",
                                  plan_id=plan_id)


def html(response) -> str:
    return response.content.decode()


# becoming a partner, and who sees what


def test_an_account_without_a_partner_profile_gets_the_become_a_partner_page(client, charlie):
    client.force_login(charlie)
    for url in (DOMAINS, CLIENTS, f"{DOMAINS}1/", f"{CLIENTS}1/"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "Become a hosting partner" in html(response)
        assert "What partners get" in html(response)
        assert f'action="{APPLY}"' in html(response)
    assert 'name="csrfmiddlewaretoken"' in html(client.get(APPLY))


def test_partner_sections_are_in_the_navigation_only_for_partners(client, charlie, alice, partner):
    client.force_login(charlie)
    assert f'href="{DOMAINS}"' not in html(client.get("/"))
    client.force_login(alice)
    page = html(client.get("/"))
    assert f'<a class="nav__link" href="{DOMAINS}">Domains</a>' in page
    assert f'<a class="nav__link" href="{CLIENTS}">Clients</a>' in page


def test_applying_creates_a_pending_partner_whose_application_is_being_reviewed(client, charlie):
    client.force_login(charlie)
    response = client.post(APPLY)
    assert response.status_code == 302 and response["Location"] == APPLY
    assert HostingPartner.objects.get(account=charlie.account).status == "pending"
    page = html(client.get(APPLY, follow=True))
    assert "Your application is being reviewed" in page
    assert "Application sent" in page
    response = client.get(DOMAINS)
    assert response.status_code == 403
    assert "Your application is being reviewed" in html(response)


def test_applying_again_never_changes_an_existing_partner(alice_client, partner):
    response = alice_client.post(APPLY, follow=True)
    assert "already has a partner profile" in html(response)
    partner.refresh_from_db()
    assert partner.status == "active"


def test_a_suspended_partner_is_told_so(client, charlie):
    hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.SUSPENDED)
    client.force_login(charlie)
    response = client.get(CLIENTS)
    assert response.status_code == 403
    assert "Your partner account is suspended" in html(response)


def test_an_htmx_request_from_a_non_partner_is_sent_to_the_page_that_explains(client, charlie):
    client.force_login(charlie)
    response = client.post(DOMAINS, {"name": "acme.test"}, **HTMX)
    assert response["HX-Redirect"] == APPLY
    assert not Domain.objects.exists()


def test_the_pages_need_a_login(client):
    for url in (DOMAINS, CLIENTS, APPLY):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_another_partners_domain_and_client_are_404_everywhere(alice_client, other_partner):
    theirs = domain_add_for_partner(partner=other_partner, name="theirs.test")
    their_client = theirs.client
    for method, url in [
        ("get", f"{DOMAINS}{theirs.pk}/"), ("post", f"{DOMAINS}{theirs.pk}/check/"),
        ("get", f"{DOMAINS}{theirs.pk}/delete/"), ("post", f"{DOMAINS}{theirs.pk}/delete/"),
        ("get", f"{CLIENTS}{their_client.pk}/"), ("post", f"{CLIENTS}{their_client.pk}/rename/"),
        ("post", f"{CLIENTS}{their_client.pk}/lapse-action/"), ("get", f"{CLIENTS}{their_client.pk}/delete/"),
        ("post", f"{CLIENTS}{their_client.pk}/delete/"),
    ]:
        response = getattr(alice_client, method)(url, {"name": "Mine now", "lapse_action_override": "suspend"})
        assert response.status_code == 404, url
    their_client.refresh_from_db()
    assert (their_client.name, their_client.lapse_action_override) == ("theirs.test", None)
    assert Domain.objects.get(pk=theirs.pk).check_attempts == 0
    assert "theirs.test" not in html(alice_client.get(DOMAINS))
    assert "theirs.test" not in html(alice_client.get(CLIENTS))


# domains


def test_the_domain_list_starts_with_an_empty_state_and_the_add_form(alice_client):
    page = html(alice_client.get(DOMAINS))
    assert "No domains yet" in page
    assert "0 of 2 domains used" in page
    assert '<label class="field__label" for="id_name">Domain name</label>' in page
    assert "A new client named after the domain" in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert f'href="{DOMAINS}" aria-current="page">Domains</a>' in page


def test_adding_a_domain_opens_its_dns_wizard(alice_client, partner):
    response = alice_client.post(DOMAINS, {"name": " Acme.TEST. ", "client": ""})
    domain = Domain.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{DOMAINS}{domain.pk}/"
    assert (domain.name, domain.account_id, domain.client.name) == ("acme.test", partner.account_id, "acme.test")
    page = html(alice_client.get(response["Location"]))
    assert "acme.test added. Create the DNS records" in page
    assert "Set up acme.test in three steps" in page


def test_a_lapsed_claim_tells_its_holder_the_name_is_free_for_others(alice_client, domain):
    assert "claim-lapsed" not in html(alice_client.get(f"{DOMAINS}{domain.pk}/"))
    with time_machine.travel(timezone.now() + timedelta(days=8)):
        page = html(alice_client.get(f"{DOMAINS}{domain.pk}/"))
    assert "This claim is more than a week old and not verified" in page
    assert "another account may claim acme.test" in page


def test_adding_a_domain_for_an_existing_client(alice_client, partner):
    client = client_create(partner=partner, name="Acme Ltd")
    alice_client.post(DOMAINS, {"name": "acme.test", "client": client.pk})
    assert Domain.objects.get().client == client
    assert PartnerClient.objects.count() == 1


@pytest.mark.parametrize("name, error", [
    ("not a domain", "is not a domain name. Enter just the name, such as example.com."),
    ("http://acme.test/x", "is not a valid domain name. Enter just the name, such as example.com."),
    ("", "This field is required."),
])
def test_an_invalid_name_is_shown_next_to_the_field_and_nothing_is_created(alice_client, name, error):
    response = alice_client.post(DOMAINS, {"name": name})
    page = html(response)
    assert response.status_code == 200
    assert error in page
    assert re.search(r'<input[^>]*name="name"[^>]*aria-invalid="true"', page)
    assert '<ul class="errorlist" id="id_name_error">' in page
    assert (Domain.objects.count(), PartnerClient.objects.count()) == (0, 0)


def test_a_name_claimed_elsewhere_is_refused_inline(alice_client, other_partner):
    domain_add_for_partner(partner=other_partner, name="taken.test")
    page = html(alice_client.post(DOMAINS, {"name": "taken.test"}))
    assert "taken.test is already set up with us" in page
    assert Domain.objects.filter(name="taken.test").count() == 1
    assert not PartnerClient.objects.filter(partner__account__users__email="alice@example.test").exists()


def test_another_partners_client_cannot_be_chosen(alice_client, other_partner):
    theirs = client_create(partner=other_partner, name="Theirs")
    page = html(alice_client.post(DOMAINS, {"name": "acme.test", "client": theirs.pk}))
    assert "Select a valid choice" in page
    assert not Domain.objects.exists()


def test_the_domain_limit_is_explained_and_nothing_is_added(alice_client, partner):
    domain_add_for_partner(partner=partner, name="one.test")
    page = html(alice_client.get(DOMAINS))
    assert "1 of 2 domains used" in page
    domain_add_for_partner(partner=partner, name="two.test")
    page = html(alice_client.get(DOMAINS))
    assert "You are using all 2 of your domains" in page
    assert 'hx-post="/portal/domains/"' not in page
    page = html(alice_client.post(DOMAINS, {"name": "three.test"}))
    assert '<div class="alert alert--warning" role="alert">' in page
    assert "You are using all 2 of your domains" in page
    assert Domain.objects.count() == 2


def test_an_htmx_add_swaps_only_the_form_with_its_errors(alice_client):
    response = alice_client.post(DOMAINS, {"name": "nope"}, **HTMX)
    page = html(response)
    assert response.status_code == 200
    assert page.startswith('<section id="domain-form"')
    assert "<html" not in page
    assert "is not a domain name" in page
    assert 'hx-swap-oob="true"' in page  # the messages region
    assert not Domain.objects.exists()


def test_an_htmx_add_goes_to_the_new_domains_wizard(alice_client):
    response = alice_client.post(DOMAINS, {"name": "acme.test"}, **HTMX)
    assert response["HX-Redirect"] == f"{DOMAINS}{Domain.objects.get().pk}/"


def test_the_wizard_shows_the_records_to_create_with_copy_buttons(alice_client, domain):
    page = html(alice_client.get(f"{DOMAINS}{domain.pk}/"))
    dkim = dkim_public_record(dkim_key_for("acme.test"))
    for key, host, value in [
        ("mx", "@", "10 mail.mailwell.test"),
        ("ownership", "@", f"{settings.DOMAIN_VERIFY_PREFIX}={domain.verification_token}"),
        ("spf", "@", "v=spf1 mx include:relay.mailwell.test ~all"),
        ("dmarc", "_dmarc", "v=DMARC1; p=none; rua=mailto:dmarc-reports@acme.test"),
        ("dkim", "dkim._domainkey", dkim),
    ]:
        assert f'id="record-{key}-host" type="text" value="{host}"' in page, key
        assert f'id="record-{key}-value" type="text" value="{value}"' in page, key
        assert f'data-copy-target="record-{key}-value"' in page, key
    assert page.count('class="dns-record dns-record--unchecked"') == 8
    assert page.count("Not checked</span>") == 8
    for purpose in ("Routes incoming mail to our mail servers", "Proves you control this domain&#x27;s DNS",
                    "Authorizes us to send mail for the domain", "Protects the domain against spoofing",
                    "Signs outgoing mail so receivers can trust it"):
        assert purpose in page
    assert "Full name: <span class=\"mono break\">_dmarc.acme.test</span>" in page
    assert "Priority <span class=\"mono\">10</span>, mail server <span class=\"mono\">mail.mailwell.test</span>" in page
    assert 'role="status" aria-live="polite"' in page
    assert 'hx-post="/portal/domains/%d/check/"' % domain.pk in page


def test_check_dns_with_nothing_published_says_what_is_missing_and_how_to_fix_it(alice_client, domain, dns_zone):
    response = alice_client.post(f"{DOMAINS}{domain.pk}/check/", **HTMX)
    page = html(response)
    assert page.startswith('<div id="dns-records"')
    assert page.count('class="dns-record dns-record--wrong"') == 2  # MX and ownership: verification needs them
    assert page.count('class="dns-record dns-record--wrong dns-record--advice"') == 6
    for reason in ("No MX record.", "No verification TXT record.", "No SPF record.", "No DMARC record.",
                   "No DKIM record."):
        assert f"<strong>{reason}</strong>" in page
    assert "Create an MX record at the domain itself (@)" in page
    assert "0 of 8 records right" in page
    assert '<div id="dns-check-status" class="dns-check-status" role="status" aria-live="polite" ' \
           'hx-swap-oob="innerHTML">Checked at' in page
    assert "The domain is not verified yet." in page
    assert '<span id="domain-status" hx-swap-oob="true">' in page
    domain.refresh_from_db()
    assert (domain.status, domain.check_attempts) == ("failed", 1)


def test_check_dns_shows_what_was_found_when_a_record_is_wrong(alice_client, domain, dns_zone):
    publish(dns_zone, domain, mx="mx.oldhost.example", spf="v=spf1 include:_spf.oldhost.example ~all")
    page = html(alice_client.post(f"{DOMAINS}{domain.pk}/check/", **HTMX))
    assert "<strong>MX points to mx.oldhost.example, expected mail.mailwell.test.</strong>" in page
    assert "We found: <code class=\"break\">10 mx.oldhost.example.</code>" in page
    assert "Replace the existing MX records with ours" in page
    assert "<strong>SPF lacks include:relay.mailwell.test.</strong>" in page
    assert "Add include:relay.mailwell.test to it, just before the final ~all or -all." in page
    assert "6 of 8 records right" in page
    assert "Published: <code class=\"break\">v=DMARC1; p=none</code>" in page
    assert Domain.objects.get(pk=domain.pk).status == "failed"


def test_check_dns_verifies_the_domain_once_its_records_are_published(alice_client, domain, dns_zone):
    publish(dns_zone, domain)
    page = html(alice_client.post(f"{DOMAINS}{domain.pk}/check/", **HTMX))
    assert page.count('class="dns-record dns-record--ok"') == 8
    assert "dns-record--wrong" not in page
    assert "8 of 8 records right" in page
    assert "acme.test is verified." in page
    assert "<span class=\"visually-hidden\">Status: </span>Verified</span>" in page  # the header badge, out of band
    domain.refresh_from_db()
    assert domain.status == "verified" and domain.dns_check == []
    page = html(alice_client.get(f"{DOMAINS}{domain.pk}/"))
    assert page.count('class="dns-record dns-record--ok"') == 8
    assert "Every record is published correctly." in page
    assert "Set up acme.test in three steps" not in page


def test_check_dns_without_javascript_redirects_with_a_message(alice_client, domain, dns_zone):
    publish(dns_zone, domain)
    response = alice_client.post(f"{DOMAINS}{domain.pk}/check/")
    assert response.status_code == 302 and response["Location"] == f"{DOMAINS}{domain.pk}/"
    assert "acme.test is verified: you can create mailboxes on it now." in html(alice_client.get(response["Location"]))


def test_deleting_a_domain_asks_first_then_deletes_it(alice_client, domain):
    confirm = html(alice_client.get(f"{DOMAINS}{domain.pk}/delete/"))
    assert "Delete acme.test?" in confirm
    assert f'<form class="card__footer" method="post" action="{DOMAINS}{domain.pk}/delete/">' in confirm
    assert 'name="csrfmiddlewaretoken"' in confirm
    wizard = html(alice_client.get(f"{DOMAINS}{domain.pk}/"))
    assert 'hx-confirm="Delete acme.test? Mail for it stops being hosted here."' in wizard
    response = alice_client.post(f"{DOMAINS}{domain.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == DOMAINS
    assert not Domain.objects.exists()
    assert "acme.test deleted." in html(alice_client.get(DOMAINS))


def test_a_domain_with_mailboxes_is_not_deleted_and_the_409_is_explained(alice_client, partner, domain):
    mailbox_on(partner, domain)
    confirm = html(alice_client.get(f"{DOMAINS}{domain.pk}/delete/"))
    assert "acme.test has 1 mailbox. Delete it first" in confirm
    response = alice_client.post(f"{DOMAINS}{domain.pk}/delete/")
    page = html(response)
    assert response.status_code == 409
    assert "The domain was not deleted: it still has mailboxes." in page
    assert "ann@acme.test" in page
    htmx = html(alice_client.post(f"{DOMAINS}{domain.pk}/delete/", **HTMX))
    assert htmx.startswith('<section id="domain-delete"')
    assert "acme.test was not deleted: it still has mailboxes." in htmx
    assert 'role="alert"' in htmx
    assert Domain.objects.filter(pk=domain.pk).exists()


def test_an_htmx_delete_goes_back_to_the_list(alice_client, domain):
    response = alice_client.post(f"{DOMAINS}{domain.pk}/delete/", **HTMX)
    assert response["HX-Redirect"] == DOMAINS
    assert not Domain.objects.exists()


def test_the_domain_list_shows_status_and_dns_progress(alice_client, partner, dns_zone):
    verified = domain_add_for_partner(partner=partner, name="done.test")
    publish(dns_zone, verified)
    alice_client.post(f"{DOMAINS}{verified.pk}/check/")
    domain_add_for_partner(partner=partner, name="new.test")
    page = html(alice_client.get(DOMAINS))
    assert "8 of 8 records right" in page
    assert "Not checked yet" in page
    assert "Awaiting DNS</span>" in page and "Verified</span>" in page
    assert 'Set up DNS<span class="visually-hidden"> for new.test</span>' in page


# clients


def test_clients_are_created_listed_and_validated(alice_client, partner):
    page = html(alice_client.get(CLIENTS))
    assert "No clients yet" in page
    response = alice_client.post(CLIENTS, {"name": "  Acme Ltd "})
    client = PartnerClient.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{CLIENTS}{client.pk}/"
    assert (client.name, client.partner) == ("Acme Ltd", partner)
    assert "Client Acme Ltd created." in html(alice_client.get(response["Location"]))
    page = html(alice_client.post(CLIENTS, {"name": "   "}))
    assert "This field is required." in page
    assert PartnerClient.objects.count() == 1


def test_an_htmx_create_clears_the_form_and_refreshes_the_list(alice_client):
    page = html(alice_client.post(CLIENTS, {"name": "Acme Ltd"}, **HTMX))
    assert page.startswith('<section id="client-form"')
    assert '<section id="clients" class="card" aria-labelledby="clients-heading" hx-swap-oob="true">' in page
    assert "Acme Ltd" in page and '<span class="badge badge--info">New</span>' in page
    assert 'value="Acme Ltd"' not in page.split("<template>")[0]


def test_a_client_is_renamed(alice_client, partner):
    client = client_create(partner=partner, name="Acme")
    response = alice_client.post(f"{CLIENTS}{client.pk}/rename/", {"name": "Acme Ltd"})
    assert response.status_code == 302
    client.refresh_from_db()
    assert client.name == "Acme Ltd"
    assert "Acme renamed to Acme Ltd." in html(alice_client.get(f"{CLIENTS}{client.pk}/"))
    page = html(alice_client.post(f"{CLIENTS}{client.pk}/rename/", {"name": ""}))
    assert "This field is required." in page
    client.refresh_from_db()
    assert client.name == "Acme Ltd"
    htmx = html(alice_client.post(f"{CLIENTS}{client.pk}/rename/", {"name": "Acme Group"}, **HTMX))
    assert htmx.startswith('<section id="client-name"')
    assert '<div id="client-heading" class="page-header__main" hx-swap-oob="true">' in htmx
    assert '<h1 class="page-header__title">Acme Group</h1>' in htmx


def test_a_client_gets_its_own_lapse_action_and_can_go_back_to_the_default(alice_client, partner):
    client = client_create(partner=partner, name="Acme")
    page = html(alice_client.get(f"{CLIENTS}{client.pk}/"))
    assert "Your default (Suspend)" in page
    alice_client.post(f"{CLIENTS}{client.pk}/lapse-action/", {"lapse_action_override": "downgrade_free"})
    client.refresh_from_db()
    assert client.lapse_action_override == "downgrade_free"
    assert "Saved: when a term ends, Acme&#x27;s mailboxes are downgraded to Free." in html(
        alice_client.get(f"{CLIENTS}{client.pk}/"))
    assert '<span class="badge badge--plan">Downgrade to Free</span>' in html(alice_client.get(CLIENTS))
    page = html(alice_client.post(f"{CLIENTS}{client.pk}/lapse-action/", {"lapse_action_override": "delete"}))
    assert "Select a valid choice" in page
    client.refresh_from_db()
    assert client.lapse_action_override == "downgrade_free"
    alice_client.post(f"{CLIENTS}{client.pk}/lapse-action/", {"lapse_action_override": ""})
    client.refresh_from_db()
    assert client.lapse_action_override is None


def test_the_clients_page_says_what_the_default_lapse_action_is_and_where_to_change_it(alice_client, partner):
    partner.default_client_lapse_action = "downgrade_free"
    partner.save()
    page = html(alice_client.get(CLIENTS))
    assert "Mailboxes not renewed in time are <strong>downgraded to Free</strong>" in page
    assert 'href="/portal/settings/#lapse-action"' in page


def test_a_clients_page_lists_its_domains_and_mailboxes(alice_client, partner, domain):
    mailbox_on(partner, domain, local_part="ann")
    domain_add_for_partner(partner=partner, name="elsewhere.test")
    page = html(alice_client.get(f"{CLIENTS}{domain.client.pk}/"))
    assert f'<a class="domain-name" href="{DOMAINS}{domain.pk}/">acme.test</a>' in page
    assert "elsewhere.test" not in page
    assert "ann@acme.test" in page
    assert "1 domain · 1 mailbox" in page
    listing = html(alice_client.get(CLIENTS))
    assert re.search(r'data-label="Domains">1</td>\s*<td class="num" data-label="Mailboxes">1</td>', listing)


def test_a_client_is_deleted_after_confirmation(alice_client, partner):
    client = client_create(partner=partner, name="Acme")
    assert "Delete the client Acme?" in html(alice_client.get(f"{CLIENTS}{client.pk}/delete/"))
    response = alice_client.post(f"{CLIENTS}{client.pk}/delete/")
    assert response.status_code == 302 and response["Location"] == CLIENTS
    assert not PartnerClient.objects.exists()


def test_a_client_with_domains_is_not_deleted_and_the_409_is_explained(alice_client, domain):
    response = alice_client.post(f"{CLIENTS}{domain.client.pk}/delete/")
    assert response.status_code == 409
    assert "The client was not deleted: it still has domains." in html(response)
    htmx = html(alice_client.post(f"{CLIENTS}{domain.client.pk}/delete/", **HTMX))
    assert htmx.startswith('<section id="client-delete"')
    assert "acme.test was not deleted: it still has 1 domain." in htmx
    assert PartnerClient.objects.filter(pk=domain.client.pk).exists()


# one round trip, a bounded number of queries


def test_the_domain_list_takes_a_fixed_number_of_queries(alice_client, partner, django_assert_max_num_queries):
    partner.extra_domain_slots = 10
    partner.save()
    for n in range(8):
        domain_add_for_partner(partner=partner, name=f"d{n}.test")
    with django_assert_max_num_queries(8):  # the add form's list of domains a new one can be an alias of
        response = alice_client.get(DOMAINS)
    assert html(response).count('class="domain-name"') == 8


def test_the_client_list_takes_a_fixed_number_of_queries(alice_client, partner, django_assert_max_num_queries):
    partner.extra_domain_slots = 10
    partner.save()
    for n in range(8):
        domain_add_for_partner(partner=partner, name=f"d{n}.test")
    with django_assert_max_num_queries(6):
        response = alice_client.get(CLIENTS)
    assert html(response).count('class="client-name"') == 8


# the dashboard


def test_the_dashboard_shows_a_partners_figures_charts_and_what_needs_attention(
        alice_client, partner, domain, django_assert_max_num_queries):
    ready = domain_add_for_partner(partner=partner, name="ready.test")
    soon = mailbox_on(partner, ready, local_part="ann", plan_id="premium")
    mailbox_on(partner, ready, local_part="bea", plan_id="pro")
    slots_grant(partner=partner, count=3)
    PartnerMailbox.objects.filter(pk=soon.pk).update(expires_at=timezone.now() + timedelta(days=3, hours=1))
    with django_assert_max_num_queries(12):
        response = alice_client.get("/")
    page = html(response)
    assert "Client mailboxes" in page
    assert re.search(r'Verified domains</h3>\s*<p class="stat__value">1<span class="stat__of"> of 2</span>', page)
    assert re.search(r'Free mailbox slots</h3>\s*<p class="stat__value">3<span class="stat__of"> of 5</span>', page)
    assert "2 active · 0 on trial" in page
    assert re.search(r'bar-list__label">Active</span>.*?bar-list__value">2</span>', page, re.S)
    assert re.search(r'bar-list__label">Premium</span>.*?bar-list__value">1</span>', page, re.S)
    assert "In use <strong>2</strong>" in page and "Free <strong>3</strong>" in page
    assert "Verified <strong>1</strong>" in page and "Awaiting DNS <strong>1</strong>" in page
    assert f'href="{DOMAINS}{domain.pk}/">acme.test</a>' in page
    assert "Awaiting DNS · not checked yet" in page
    assert "ann@ready.test" in page and "Term ends in 3" in page
    assert "bea@ready.test" not in page
    for text in ("Your plan", "Webhooks", "AI agent tools"):  # the rest of the dashboard is still there
        assert text in page


def test_the_dashboard_of_a_partner_with_nothing_to_do_says_all_clear(alice_client):
    page = html(alice_client.get("/"))
    assert "All clear" in page
    assert "Buy a slot pool to fund client mailboxes." in page


def test_the_dashboard_of_a_non_partner_keeps_its_overview_and_offers_nothing_partner(client, charlie):
    client.force_login(charlie)
    page = html(client.get("/"))
    assert "API keys" in page and "Get started" in page
    assert "Needs attention" not in page
    assert f'href="{APPLY}">Become a partner</a>' in page


def test_the_demo_partners_verified_domain_never_reads_not_checked_yet(client):
    from io import StringIO

    from django.core.management import call_command

    call_command("seed_demo", stdout=StringIO())
    assert client.post("/accounts/login/", {"login": "partner@mailwell.test", "password": "partner-pass-2026"}
                       ).status_code == 302
    page = html(client.get(DOMAINS))
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*acme-bakery\.test(?:(?!</tr>).)*</tr>", page, re.S).group(0)
    assert "Verified" in row and "8 of 8 records right" in row
    assert "Not checked yet" not in row
    domain = Domain.objects.get(name="acme-bakery.test")
    detail = html(client.get(f"{DOMAINS}{domain.pk}/"))
    assert detail.count("<span class=\"visually-hidden\">Status: </span>Found</span>") == 8
    assert "Not checked" not in detail.split('id="mail-apps-dns"')[0]
