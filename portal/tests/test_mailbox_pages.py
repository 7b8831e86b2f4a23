"""The portal's mailbox pages: the list with its filters, create with inline errors, the mailbox's page
(renew, delete, identity, forwarding, aliases), htmx regions, the partner gate and tenant isolation."""
import re

import pytest
from django.core import mail

from mailcore.partners.services import hosting_partner_enable
from mailcore.mailboxes.models import Alias, ForwardingRule, Mailbox
from billing.services.mailboxes import partner_mailbox_open
from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.partners.services import slots_grant
from testkit.factories import UserFactory, make_domain

pytestmark = pytest.mark.django_db

LIST = "/portal/mailboxes/"
NEW = "/portal/mailboxes/new/"
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def partner(alice):
    partner = hosting_partner_enable(account=alice.account, status="active")
    slots_grant(partner=partner, count=5)
    return partner


@pytest.fixture
def domain(partner):
    domain = make_domain(partner.account, "acme.test")
    domain.client = PartnerClient.objects.create(partner=partner, name="Acme Ltd")
    domain.save(update_fields=["client"])
    return domain


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def partner_mailbox(partner, domain):
    return partner_mailbox_open(partner=partner, domain=domain, local_part="ann", password="s3cret-pass",
                                  plan_id="pro", display_name="Ann")


@pytest.fixture
def other_partner_mailbox(db):
    """A mailbox of another partner, bob-like but in his own account."""
    stranger = UserFactory(email="dave@example.test", account__plan_code="premium")
    partner = hosting_partner_enable(account=stranger.account, status="active")
    slots_grant(partner=partner, count=1)
    domain = make_domain(stranger.account, "dave.test")
    return partner_mailbox_open(partner=partner, domain=domain, local_part="dave", password="s3cret-pass",
                                  plan_id="pro")


def page(partner_mailbox, suffix="") -> str:
    return f"/portal/mailboxes/{partner_mailbox.pk}/{suffix}"


def field_errors(html: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.DOTALL)
    return found.group(1) if found else ""


# the partner gate and tenant isolation


def test_an_account_that_is_not_a_partner_sees_the_become_a_partner_page(client, charlie):
    client.force_login(charlie)
    for url in (LIST, NEW):
        response = client.get(url)
        html = response.content.decode()
        assert response.status_code == 403
        assert "Become a hosting partner" in html
        assert "Mailboxes are part of the hosting partner program" in html
    assert 'href="/portal/mailboxes/"' not in client.get("/").content.decode()


def test_a_pending_partner_is_told_the_application_is_being_reviewed(client, charlie):
    hosting_partner_enable(account=charlie.account, status="pending")
    client.force_login(charlie)
    response = client.get(LIST)
    assert response.status_code == 403
    assert "being reviewed" in response.content.decode()


def test_the_partner_gate_sends_htmx_to_the_page_that_explains(client, charlie):
    client.force_login(charlie)
    response = client.get(LIST, **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == LIST


def test_signed_out_visitors_are_sent_to_log_in(client):
    response = client.get(LIST)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("suffix, method", [
    ("", "get"), ("renew/", "post"), ("delete/", "get"), ("delete/", "post"), ("identity/", "post"),
    ("forwarding/", "post"), ("aliases/", "post"),
])
def test_another_partners_mailbox_is_404_and_untouched(alice_client, partner, other_partner_mailbox, suffix, method):
    before = PartnerMailbox.objects.get(pk=other_partner_mailbox.pk)
    response = getattr(alice_client, method)(page(other_partner_mailbox, suffix), {"display_name": "Hacked",
                                                                                      "forward_to": "x@evil.test",
                                                                                      "alias_address": "x@dave.test"})
    after = PartnerMailbox.objects.select_related("mailbox").get(pk=other_partner_mailbox.pk)
    assert response.status_code == 404
    assert (after.status, after.expires_at, after.mailbox.display_name, after.mailbox.is_active) == (
        before.status, before.expires_at, "", True)
    assert ForwardingRule.objects.count() == 0 and Alias.objects.count() == 0


def test_a_stranger_gets_404_for_a_partners_mailbox(client, charlie, partner_mailbox):
    client.force_login(charlie)
    assert client.get(page(partner_mailbox)).status_code == 404
    assert client.post(page(partner_mailbox, "delete/")).status_code == 404
    assert PartnerMailbox.objects.filter(pk=partner_mailbox.pk).exists()


def test_another_partners_rule_and_alias_are_404(alice_client, partner_mailbox, other_partner_mailbox):
    rule = ForwardingRule.objects.create(mailbox=other_partner_mailbox.mailbox, forward_to="x@elsewhere.test")
    alias = Alias.objects.create(mailbox=other_partner_mailbox.mailbox, address="other@dave.test")
    assert alice_client.post(page(partner_mailbox, f"forwarding/{rule.pk}/enabled/"),
                             {"enabled": "false"}).status_code == 404
    assert alice_client.post(page(partner_mailbox, f"forwarding/{rule.pk}/delete/")).status_code == 404
    assert alice_client.post(page(partner_mailbox, f"aliases/{alias.pk}/delete/")).status_code == 404
    rule.refresh_from_db()
    assert rule.enabled is True
    assert Alias.objects.filter(pk=alias.pk).exists()


# the list


def test_the_list_shows_an_empty_state_that_says_what_to_do_next(alice_client, partner, domain):
    html = alice_client.get(LIST).content.decode()
    assert "No mailboxes yet" in html
    assert "Create your first mailbox" in html
    assert 'href="/portal/mailboxes/" aria-current="page">Mailboxes</a>' in html


def test_the_list_without_a_verified_domain_asks_for_a_domain_first(alice_client, partner):
    html = alice_client.get(LIST).content.decode()
    assert "Mailboxes live on a verified domain" in html
    assert "Create your first mailbox" not in html


def test_the_list_shows_mailboxes_with_client_plan_status_and_term(alice_client, partner_mailbox):
    html = alice_client.get(LIST).content.decode()
    assert f'href="/portal/mailboxes/{partner_mailbox.pk}/">ann@acme.test</a>' in html
    assert "Acme Ltd" in html
    assert ">Pro<" in html
    assert "Active</span>" in html
    assert partner_mailbox.expires_at.strftime("%-d %b %Y") in html


def make_mailboxes(partner, count: int) -> list[PartnerMailbox]:
    slots_grant(partner=partner, count=count)
    clients = [PartnerClient.objects.create(partner=partner, name=f"Client {n}") for n in range(2)]
    domains = []
    for n, client in enumerate(clients):
        domain = make_domain(partner.account, f"client{n}.test")
        domain.client = client
        domain.save(update_fields=["client"])
        domains.append(domain)
    return [partner_mailbox_open(partner=partner, domain=domains[n % 2], local_part=f"user{n}",
                                   password="s3cret-pass", plan_id="pro") for n in range(count)]


@pytest.mark.parametrize("count", [1, 12])
def test_the_list_takes_a_bounded_number_of_queries(alice_client, partner, count, django_assert_max_num_queries):
    make_mailboxes(partner, count)
    with django_assert_max_num_queries(12):
        response = alice_client.get(LIST)
    assert response.content.decode().count('class="mailbox-address"') == count


def test_the_list_filters_by_status_client_and_domain(alice_client, partner):
    rows = make_mailboxes(partner, 4)
    PartnerMailbox.objects.filter(pk=rows[0].pk).update(status="suspended")
    client_1 = PartnerClient.objects.get(name="Client 1")
    domain_0 = rows[0].mailbox.domain

    def shown(query) -> set[str]:
        html = alice_client.get(LIST, query).content.decode()
        return set(re.findall(r'class="mailbox-address" href="[^"]+">([^<]+)</a>', html))

    assert shown({"status": "suspended"}) == {"user0@client0.test"}
    assert shown({"client": client_1.pk}) == {"user1@client1.test", "user3@client1.test"}
    assert shown({"domain": domain_0.pk, "status": "active"}) == {"user2@client0.test"}
    assert shown({"client": "not-a-number"}) == {f"user{n}@client{n % 2}.test" for n in range(4)}


def test_filters_that_match_nothing_offer_to_clear_them(alice_client, partner_mailbox):
    html = alice_client.get(LIST, {"status": "expired"}).content.decode()
    assert "No mailboxes match these filters" in html
    assert 'href="/portal/mailboxes/">Clear filters</a>' in html


def test_filtering_by_htmx_returns_the_table_and_the_live_count(alice_client, partner_mailbox):
    response = alice_client.get(LIST, {"status": "active"}, HTTP_HX_TARGET="mailboxes", **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="mailboxes"')
    assert "<html" not in html
    assert '<p id="mailboxes-count" class="filters__count text-sm text-muted" role="status" aria-live="polite" ' \
           'hx-swap-oob="true">' in html
    assert "1 matching mailbox" in html


# create


def test_the_create_form_lists_the_partners_domains_by_client_and_the_plans(alice_client, domain, partner):
    make_domain(partner.account, "unclaimed.test").__class__.objects.filter(name="unclaimed.test").update(
        status="pending")
    html = alice_client.get(NEW).content.decode()
    assert '<optgroup label="Acme Ltd">' in html
    assert "unclaimed.test (not verified)" in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "5 GB storage · 2,000 sends a day" in html
    assert 'autocomplete="new-password"' in html


def test_creating_a_mailbox_redirects_to_its_page_with_a_message(alice_client, partner, domain):
    response = alice_client.post(NEW, {"domain": domain.pk, "local_part": "Bea", "password": "long-enough",
                                       "plan_id": "premium", "display_name": "Bea Smith"}, follow=True)
    created = PartnerMailbox.objects.select_related("mailbox").get(partner=partner)
    html = response.content.decode()
    assert response.redirect_chain == [(f"/portal/mailboxes/{created.pk}/", 302)]
    assert (created.mailbox.address, created.plan_type, created.mailbox.display_name) == (
        "bea@acme.test", "premium", "Bea Smith")
    assert "Mailbox bea@acme.test created" in html


def test_creating_by_htmx_sends_the_browser_to_the_new_mailbox(alice_client, partner, domain):
    response = alice_client.post(NEW, {"domain": domain.pk, "local_part": "bea", "password": "long-enough",
                                       "plan_id": "pro"}, **HTMX)
    assert response["HX-Redirect"] == f"/portal/mailboxes/{PartnerMailbox.objects.get().pk}/"


@pytest.mark.parametrize("data, field, message", [
    ({"local_part": "bea", "password": "short"}, "password", "At least 8 characters"),
    ({"local_part": "-bea", "password": "long-enough"}, "local_part", "Use letters, digits"),
    ({"local_part": "bea", "password": "long-enough", "plan_id": "free"}, "plan_id", "Select a valid choice"),
    ({"local_part": "", "password": "long-enough"}, "local_part", "This field is required"),
])
def test_invalid_input_is_shown_next_to_its_field_and_nothing_is_created(alice_client, partner, domain, data,
                                                                         field, message):
    response = alice_client.post(NEW, {"domain": domain.pk, "plan_id": "pro", **data})
    html = response.content.decode()
    assert response.status_code == 200
    assert message in field_errors(html, field)
    assert 'aria-invalid="true"' in html
    assert PartnerMailbox.objects.count() == 0 and Mailbox.objects.count() == 0
    assert MailboxSlot.objects.filter(partner=partner, status="unused").count() == 5


def test_an_unverified_domain_is_refused_next_to_the_domain(alice_client, partner):
    pending = make_domain(partner.account, "pending.test")
    type(pending).objects.filter(pk=pending.pk).update(status="pending")
    html = alice_client.post(NEW, {"domain": pending.pk, "local_part": "bea", "password": "long-enough",
                                   "plan_id": "pro"}).content.decode()
    assert "pending.test is not verified yet" in field_errors(html, "domain")
    assert Mailbox.objects.count() == 0


def test_without_a_free_slot_nothing_is_created_and_the_form_says_why(alice_client, partner, domain):
    MailboxSlot.objects.filter(partner=partner).delete()
    html = alice_client.post(NEW, {"domain": domain.pk, "local_part": "bea", "password": "long-enough",
                                   "plan_id": "pro"}).content.decode()
    assert "You have no unused Pro slot, so this Pro mailbox was not created. Buy Pro slots" in html
    assert 'role="alert"' in html
    assert Mailbox.objects.count() == 0


def test_a_pro_mailbox_without_pro_slots_names_the_plan_that_has_them_and_offers_it(alice_client, partner, domain):
    MailboxSlot.objects.filter(partner=partner).update(plan_type="premium")
    html = alice_client.post(NEW, {"domain": domain.pk, "local_part": "bea", "password": "long-enough",
                                   "plan_id": "pro"}).content.decode()
    assert ("You have no unused Pro slot, so this Pro mailbox was not created. Your unused slots are for Premium "
            "(5 unused): create the mailbox on that plan, or buy Pro slots.") in html
    assert 'href="/portal/mailboxes/new/?plan_id=premium&amp;funding_mode=slot">Create as Premium</a>' in html
    assert 'href="/portal/billing/slots/?plan_type=pro">Buy Pro slots</a>' in html
    assert re.search(r"<dt>Premium slots</dt><dd>5 unused</dd>", html)
    assert re.search(r"<dt>Pro slots</dt><dd>0 unused</dd>", html)
    assert Mailbox.objects.count() == 0
    assert MailboxSlot.objects.filter(partner=partner, status="unused").count() == 5

    created = alice_client.post(NEW, {"domain": domain.pk, "local_part": "bea", "password": "long-enough",
                                      "plan_id": "premium"})
    assert created.status_code == 302
    assert PartnerMailbox.objects.get(mailbox__local_part="bea").plan_type == "premium"


def test_the_slot_counts_add_up_with_a_row_for_slots_that_fit_any_plan(alice_client, partner):
    slots_grant(partner=partner, count=2, plan_type="premium")
    html = alice_client.get(NEW).content.decode()
    rows = dict(re.findall(r'<div class="kv__row"><dt>([^<]+)</dt><dd>([^<]+)</dd></div>', html))
    assert rows["Unused slots"] == "7"
    assert rows["Pro slots"] == "0 unused" and rows["Premium slots"] == "2 unused" and rows["Any plan"] == "5 unused"


def test_buy_slots_for_the_missing_plan_opens_with_that_plan_chosen(alice_client, partner):
    html = alice_client.get("/portal/billing/slots/?plan_type=premium").content.decode()
    assert re.search(r'<input type="radio" name="plan_type" value="premium"[^>]*checked', html)


def test_an_existing_address_is_refused_next_to_the_address(alice_client, partner_mailbox, domain):
    html = alice_client.post(NEW, {"domain": domain.pk, "local_part": "ann", "password": "long-enough",
                                   "plan_id": "pro"}).content.decode()
    assert "ann@acme.test already exists" in field_errors(html, "local_part")
    assert PartnerMailbox.objects.count() == 1


def test_a_domain_of_another_account_is_not_a_choice(alice_client, partner, other_partner_mailbox):
    html = alice_client.post(NEW, {"domain": other_partner_mailbox.mailbox.domain_id, "local_part": "bea",
                                   "password": "long-enough", "plan_id": "pro"}).content.decode()
    assert "Select a valid choice" in field_errors(html, "domain")
    assert "dave.test" not in html
    assert PartnerMailbox.objects.filter(partner__account=partner.account).count() == 0


def test_invalid_input_by_htmx_gets_the_form_back_with_focus_on_the_first_error(alice_client, partner, domain):
    response = alice_client.post(NEW, {"domain": domain.pk, "local_part": "bea", "password": "short",
                                       "plan_id": "pro"}, **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="mailbox-form"')
    assert re.search(r'<input type="password" name="password"[^>]*autofocus', html)
    assert 'value="short"' not in html
    assert 'id="messages"' in html


# the mailbox's page


def test_the_page_shows_status_plan_storage_forwarding_aliases_and_identity(alice_client, partner_mailbox):
    ForwardingRule.objects.create(mailbox=partner_mailbox.mailbox, forward_to="ann@home.test")
    Alias.objects.create(mailbox=partner_mailbox.mailbox, address="sales@acme.test")
    html = alice_client.get(page(partner_mailbox)).content.decode()
    for text in ("ann@acme.test", "Acme Ltd", "Active</span>", ">Pro<", "0 MB of 5 GB", 'aria-valuenow="0"',
                 "ann@home.test", "Waiting for confirmation", "sales@acme.test", 'value="Ann"',
                 "Renew for a month", "Delete mailbox"):
        assert text in html, text


def test_the_page_takes_a_bounded_number_of_queries(alice_client, partner_mailbox, django_assert_max_num_queries):
    for n in range(5):
        ForwardingRule.objects.create(mailbox=partner_mailbox.mailbox, forward_to=f"f{n}@home.test")
        Alias.objects.create(mailbox=partner_mailbox.mailbox, address=f"a{n}@acme.test")
    with django_assert_max_num_queries(12):
        assert alice_client.get(page(partner_mailbox)).status_code == 200


def test_renewing_extends_the_term_by_a_month(alice_client, partner_mailbox):
    before = partner_mailbox.expires_at
    response = alice_client.post(page(partner_mailbox, "renew/"))
    partner_mailbox.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == f"/portal/mailboxes/{partner_mailbox.pk}/#mailbox-status"
    assert (partner_mailbox.expires_at - before).days == 30


def test_renewing_a_suspended_mailbox_by_htmx_swaps_the_status_card(alice_client, partner_mailbox):
    PartnerMailbox.objects.filter(pk=partner_mailbox.pk).update(status="suspended")
    response = alice_client.post(page(partner_mailbox, "renew/"), **HTMX)
    html = response.content.decode()
    partner_mailbox.refresh_from_db()
    assert partner_mailbox.status == "active"
    assert html.startswith('<section id="mailbox-status"')
    assert "Active</span>" in html
    assert "renewed until" in html


def test_renew_needs_a_post(alice_client, partner_mailbox):
    before = partner_mailbox.expires_at
    assert alice_client.get(page(partner_mailbox, "renew/")).status_code == 405
    partner_mailbox.refresh_from_db()
    assert partner_mailbox.expires_at == before


def test_delete_asks_for_confirmation_without_javascript(alice_client, partner_mailbox):
    response = alice_client.get(page(partner_mailbox, "delete/"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Delete this mailbox?" in html
    assert f'action="/portal/mailboxes/{partner_mailbox.pk}/delete/"' in html
    assert PartnerMailbox.objects.filter(pk=partner_mailbox.pk).exists()


def test_deleting_frees_the_slot_and_keeps_the_mail_account_inactive(alice_client, partner, partner_mailbox):
    mailbox = partner_mailbox.mailbox
    response = alice_client.post(page(partner_mailbox, "delete/"), follow=True)
    mailbox.refresh_from_db()
    assert response.redirect_chain == [(LIST, 302)]
    assert "Mailbox ann@acme.test deleted" in response.content.decode()
    assert not PartnerMailbox.objects.filter(pk=partner_mailbox.pk).exists()
    assert mailbox.is_active is False
    assert MailboxSlot.objects.filter(partner=partner, status="unused").count() == 5


def test_deleting_by_htmx_sends_the_browser_to_the_list(alice_client, partner_mailbox):
    response = alice_client.post(page(partner_mailbox, "delete/"), **HTMX)
    assert response["HX-Redirect"] == LIST
    assert not PartnerMailbox.objects.filter(pk=partner_mailbox.pk).exists()


def test_the_delete_link_asks_with_hx_confirm(alice_client, partner_mailbox):
    html = alice_client.get(page(partner_mailbox)).content.decode()
    assert f'href="/portal/mailboxes/{partner_mailbox.pk}/delete/"' in html
    assert 'hx-confirm="Delete the mailbox ann@acme.test?' in html


# identity


def test_identity_editing_sanitizes_the_signature(alice_client, partner_mailbox):
    response = alice_client.post(page(partner_mailbox, "identity/"), {
        "display_name": "  Ann Smith ",
        "signature_html": '<p onclick="steal()">Ann <b>Smith</b></p><script>alert(1)</script>'
                          '<a href="javascript:alert(2)">x</a>'}, follow=True)
    mailbox = Mailbox.objects.get(pk=partner_mailbox.mailbox_id)
    html = response.content.decode()
    assert mailbox.display_name == "Ann Smith"
    assert "<b>Smith</b>" in mailbox.signature_html
    for unsafe in ("onclick", "<script", "javascript:"):
        assert unsafe not in mailbox.signature_html
    assert "Identity saved" in html
    assert "&lt;b&gt;Smith&lt;/b&gt;" in html  # shown as source, never rendered into the portal
    assert "<script>alert(1)</script>" not in html


def test_identity_by_htmx_swaps_its_card(alice_client, partner_mailbox):
    response = alice_client.post(page(partner_mailbox, "identity/"), {"display_name": "Ann S.",
                                                                      "signature_html": ""}, **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="identity"')
    assert 'value="Ann S."' in html
    assert "Identity saved" in html


def test_a_display_name_with_a_line_break_is_refused_and_nothing_changes(alice_client, partner_mailbox):
    html = alice_client.post(page(partner_mailbox, "identity/"), {"display_name": "Ann\r\nBcc: x@evil.test",
                                                                  "signature_html": "<p>x</p>"}).content.decode()
    mailbox = Mailbox.objects.get(pk=partner_mailbox.mailbox_id)
    assert "without control characters" in field_errors(html, "display_name")
    assert (mailbox.display_name, mailbox.signature_html) == ("Ann", "")


# forwarding


def test_adding_forwarding_mails_the_target_a_confirmation_link(alice_client, partner_mailbox):
    response = alice_client.post(page(partner_mailbox, "forwarding/"), {"forward_to": "Ann@Home.test",
                                                                       "keep_copy": "on"}, **HTMX)
    html = response.content.decode()
    rule = ForwardingRule.objects.get(mailbox=partner_mailbox.mailbox)
    assert (rule.forward_to, rule.keep_copy, rule.confirmed_at) == ("ann@home.test", True, None)
    assert [message.to for message in mail.outbox] == [["ann@home.test"]]
    assert html.startswith('<section id="forwarding"')
    assert "Waiting for confirmation" in html
    assert "We emailed ann@home.test a confirmation link" in html


def test_forwarding_to_the_mailbox_itself_is_refused_inline(alice_client, partner_mailbox):
    html = alice_client.post(page(partner_mailbox, "forwarding/"), {"forward_to": "ann@acme.test"}).content.decode()
    assert "That address delivers to this mailbox itself" in field_errors(html, "forward_to")
    assert ForwardingRule.objects.count() == 0 and mail.outbox == []


def test_a_rule_is_turned_off_and_on_and_removed(alice_client, partner_mailbox):
    rule = ForwardingRule.objects.create(mailbox=partner_mailbox.mailbox, forward_to="ann@home.test")
    alice_client.post(page(partner_mailbox, f"forwarding/{rule.pk}/enabled/"), {"enabled": "false"})
    rule.refresh_from_db()
    assert rule.enabled is False
    html = alice_client.post(page(partner_mailbox, f"forwarding/{rule.pk}/enabled/"), {"enabled": "true"},
                             **HTMX).content.decode()
    rule.refresh_from_db()
    assert rule.enabled is True and "turned on" in html
    confirm = alice_client.get(page(partner_mailbox, f"forwarding/{rule.pk}/delete/")).content.decode()
    assert "Remove this forwarding?" in confirm
    assert ForwardingRule.objects.filter(pk=rule.pk).exists()
    alice_client.post(page(partner_mailbox, f"forwarding/{rule.pk}/delete/"))
    assert not ForwardingRule.objects.filter(pk=rule.pk).exists()


# aliases


def test_an_alias_is_added_and_removed(alice_client, partner_mailbox):
    html = alice_client.post(page(partner_mailbox, "aliases/"), {"alias_address": "Sales@acme.test"},
                             **HTMX).content.decode()
    alias = Alias.objects.get(mailbox=partner_mailbox.mailbox)
    assert alias.address == "sales@acme.test"
    assert html.startswith('<section id="aliases"') and "Alias sales@acme.test added" in html
    alice_client.post(page(partner_mailbox, f"aliases/{alias.pk}/delete/"))
    assert not Alias.objects.filter(pk=alias.pk).exists()


@pytest.mark.parametrize("address, message", [
    ("sales@elsewhere.test", "elsewhere.test is not one of this account"),
    ("ann@acme.test", "already in use"),
    ("no-at-sign", "Enter an address"),
])
def test_a_bad_alias_is_refused_next_to_the_field(alice_client, partner_mailbox, address, message):
    html = alice_client.post(page(partner_mailbox, "aliases/"), {"alias_address": address}).content.decode()
    assert message in field_errors(html, "alias_address")
    assert Alias.objects.count() == 0


def test_a_link_from_a_domain_preselects_it_in_the_create_form(alice_client, domain):
    html = alice_client.get(NEW, {"domain": domain.pk}).content.decode()
    assert f'<option value="{domain.pk}" selected>acme.test</option>' in html


def test_a_link_from_a_client_filters_the_list_by_it(alice_client, partner_mailbox, domain):
    html = alice_client.get(LIST, {"client": domain.client_id}).content.decode()
    assert f'<option value="{domain.client_id}" selected>Acme Ltd</option>' in html
    assert "1 matching mailbox" in html


def test_the_list_pages_through_many_mailboxes_keeping_the_filters(alice_client, partner, monkeypatch):
    monkeypatch.setattr("portal.partner.mailboxes.PAGE_SIZE", 2)
    make_mailboxes(partner, 5)
    first = alice_client.get(LIST, {"status": "active"}).content.decode()
    last = alice_client.get(LIST, {"status": "active", "page": 3}).content.decode()
    assert first.count('class="mailbox-address"') == 2 and last.count('class="mailbox-address"') == 1
    assert "Page 1 of 3" in first and 'href="?status=active&amp;page=2"' in first
    assert "Page 3 of 3" in last and 'href="?status=active&amp;page=2"' in last


def test_removing_an_alias_asks_for_confirmation_without_javascript(alice_client, partner_mailbox):
    alias = Alias.objects.create(mailbox=partner_mailbox.mailbox, address="sales@acme.test")
    html = alice_client.get(page(partner_mailbox, f"aliases/{alias.pk}/delete/")).content.decode()
    assert "Remove this alias?" in html
    assert f'action="/portal/mailboxes/{partner_mailbox.pk}/aliases/{alias.pk}/delete/"' in html
    assert Alias.objects.filter(pk=alias.pk).exists()
