"""The partner's portal pages stay flat as it grows: the mailbox list and the dashboard take the same
number of queries for 2 and for 30 mailboxes, the list shows 50 a page, and its address search finds
mailboxes by part of the address (a domain too), with and without htmx, keeping the page links."""
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mailcore.accounts.models import Account, User
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable

pytestmark = pytest.mark.django_db

LIST = "/portal/mailboxes/"
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "mailboxes"}


def partner_with(count: int, alice) -> Client:
    """A signed-in partner with `count` mailboxes over three clients' domains, soon ending and not."""
    account = Account.objects.create(name=f"Partner {count}", plan=alice.account.plan)
    user = User.objects.create_user(email=f"owner{count}@example.test", password="x" * 12, account=account)
    partner = hosting_partner_enable(account=account, status="active")
    clients = [PartnerClient.objects.create(partner=partner, name=f"Client {n}") for n in range(3)]
    domains = [Domain.objects.create(account=account, client=client, name=f"client{n}.p{partner.pk}.test",
                                     status="verified", verification_token="t") for n, client in enumerate(clients)]
    for n in range(count):
        domain = domains[n % 3]
        mailbox = Mailbox.objects.create(account=account, domain=domain, local_part=f"user{n}",
                                         address=f"user{n}@{domain.name}")
        PartnerMailbox.objects.create(partner=partner, mailbox=mailbox, plan_type="pro", status="active",
                                      slot=MailboxSlot.objects.create(partner=partner, status="assigned"),
                                      expires_at=timezone.now() + timedelta(days=2 + n % 40))
    client = Client()
    client.force_login(user)
    return client


def queries(client, path: str) -> int:
    client.get(path)  # the first request of a session reads what later ones have cached
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def shown(html: str) -> list[str]:
    return re.findall(r'class="mailbox-address" href="[^"]+">([^<]+)</a>', html)


@pytest.mark.parametrize("path", [LIST, "/"])
def test_the_list_and_the_dashboard_take_the_same_queries_for_2_and_for_30_mailboxes(alice, path):
    assert queries(partner_with(2, alice), path) == queries(partner_with(30, alice), path)


def test_the_list_shows_50_mailboxes_a_page(alice):
    client = partner_with(60, alice)
    first, second = client.get(LIST).content.decode(), client.get(LIST, {"page": 2}).content.decode()
    assert len(shown(first)) == 50 and len(shown(second)) == 10
    assert shown(first)[0].startswith("user59@") and shown(second)[-1].startswith("user0@")  # newest first
    assert "Page 1 of 2" in first and 'href="?page=2"' in first


def test_the_search_finds_mailboxes_by_part_of_the_address(alice):
    client = partner_with(12, alice)
    assert sorted(shown(client.get(LIST, {"q": "USER1"}).content.decode())) == [
        address for address in sorted(Mailbox.objects.values_list("address", flat=True)) if address.startswith("user1")]
    by_domain = shown(client.get(LIST, {"q": "client2."}).content.decode())
    assert len(by_domain) == 4 and all("@client2." in address for address in by_domain)


def test_a_search_that_matches_nothing_offers_to_clear_it(alice):
    html = partner_with(3, alice).get(LIST, {"q": "nobody"}).content.decode()
    assert shown(html) == [] and "No mailboxes match these filters" in html
    assert 'value="nobody"' in html


def test_searching_by_htmx_returns_the_table_and_the_live_count(alice):
    response = partner_with(12, alice).get(LIST, {"q": "user1"}, **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="mailboxes"') and "<html" not in html
    assert len(shown(html)) == 3 and "3 matching mailboxes" in html


def test_the_page_links_keep_the_search(alice, monkeypatch):
    monkeypatch.setattr("portal.partner.mailboxes.PAGE_SIZE", 2)
    html = partner_with(9, alice).get(LIST, {"q": "client0"}).content.decode()
    assert len(shown(html)) == 2 and "Page 1 of 2" in html and 'href="?q=client0&amp;page=2"' in html


def test_the_filters_keep_their_choices_and_selection(alice):
    client = partner_with(3, alice)
    chosen = PartnerClient.objects.get(name="Client 1", partner__account__name="Partner 3")
    html = client.get(LIST, {"client": chosen.pk, "status": "active"}).content.decode()
    assert f'<option value="{chosen.pk}" selected>Client 1</option>' in html
    assert '<option value="active" selected>Active</option>' in html
    assert '<option value="" selected>All domains</option>' in html
    assert shown(html) == [f"user1@client1.p{chosen.partner_id}.test"]
