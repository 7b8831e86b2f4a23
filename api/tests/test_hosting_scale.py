"""The partner's reads stay flat as it grows: GET /v1/hosting/stats and GET /v1/hosting/mailboxes take
the same number of queries for 2 and for 30 mailboxes (spread over clients and domains, some paid as
you go and waiting for payment), and the list pages newest first."""
from datetime import timedelta

import pytest
from django.utils import timezone

from billing.models import Purchase
from mailcore.apikeys.scopes import PARTNER_SCOPES
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import HostingPartner, MailboxSlot, PartnerClient, PartnerMailbox
from mailcore.partners.services import hosting_partner_enable
from testkit.clients import new_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status=HostingPartner.Status.ACTIVE)


@pytest.fixture
def hosting(api, alice, partner):
    api.credentials(HTTP_X_API_KEY=new_key(alice, scopes=list(PARTNER_SCOPES)))
    return api


def grow(partner, count: int) -> list[PartnerMailbox]:
    """`count` mailboxes over three clients and their domains, every fifth paid as you go and waiting
    for its first payment (with its open checkout), the others on slots; returned oldest first."""
    clients = [PartnerClient.objects.create(partner=partner, name=f"Client {n}") for n in range(3)]
    domains = [Domain.objects.create(account=partner.account, client=client, name=f"client{n}.p{partner.pk}.test",
                                     status="verified", verification_token="t") for n, client in enumerate(clients)]
    rows = []
    for n in range(count):
        domain = domains[n % 3]
        mailbox = Mailbox.objects.create(account=partner.account, domain=domain, local_part=f"user{n}",
                                         address=f"user{n}@{domain.name}")
        payg = n % 5 == 0
        slot = None if payg else MailboxSlot.objects.create(partner=partner, status="assigned")
        rows.append(PartnerMailbox.objects.create(
            partner=partner, mailbox=mailbox, slot=slot, plan_type="pro",
            status="pending_payment" if payg else "active", funding_mode="pay_as_you_go" if payg else "slot",
            expires_at=timezone.now() + timedelta(days=30)))
        if payg:
            Purchase.objects.create(reference=f"ref-{partner.pk}-{n}", account=partner.account, kind="mailbox", amount_minor=500,
                                    currency="usd", provider="local", description="Mailbox",
                                    checkout_url=f"https://pay.example.test/{n}", partner_mailbox=rows[-1])
    return rows


def queries_for(hosting, path: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        assert hosting.get(path).status_code == 200
    return len(queries)


@pytest.mark.parametrize("path", ["/v1/hosting/stats", "/v1/hosting/mailboxes?per_page=50", "/v1/hosting/mailboxes"])
def test_a_partner_read_takes_the_same_queries_for_2_and_for_30_mailboxes(alice, path):
    from rest_framework.test import APIClient

    counts = []
    for size in (2, 30):
        account = type(alice.account).objects.create(name=f"Partner {size}", plan=alice.account.plan)
        user = type(alice).objects.create_user(email=f"owner{size}@example.test", password="x" * 12, account=account)
        grow(hosting_partner_enable(account=account, status="active"), size)
        client = APIClient()
        client.credentials(HTTP_X_API_KEY=new_key(user, scopes=list(PARTNER_SCOPES)))
        queries_for(client, path)  # a first request reads the price table once
        counts.append(queries_for(client, path))
    assert counts[0] == counts[1]


def test_the_mailbox_list_pages_newest_first(hosting, partner):
    rows = grow(partner, 7)
    newest_first = [row.mailbox.address for row in reversed(rows)]
    first = hosting.get("/v1/hosting/mailboxes", {"per_page": 3}).json()
    third = hosting.get("/v1/hosting/mailboxes", {"page": 3, "per_page": 3}).json()
    assert [row["email_address"] for row in first] == newest_first[:3]
    assert [row["email_address"] for row in third] == newest_first[6:]
    assert hosting.get("/v1/hosting/mailboxes", {"page": 4, "per_page": 3}).json() == []
    assert len(hosting.get("/v1/hosting/mailboxes", {"page": 1}).json()) == 7  # per_page defaults to 50


def test_without_paging_the_list_is_whole_as_before(hosting, partner):
    grow(partner, 7)
    assert len(hosting.get("/v1/hosting/mailboxes").json()) == 7


def test_a_page_in_the_list_shows_the_open_checkout_of_a_mailbox_waiting_for_payment(hosting, partner):
    rows = grow(partner, 6)
    listed = {row["id"]: row for row in hosting.get("/v1/hosting/mailboxes", {"per_page": 50}).json()}
    assert listed[rows[0].pk]["checkout_url"] == "https://pay.example.test/0"
    assert listed[rows[5].pk]["checkout_url"] == "https://pay.example.test/5"
    assert "checkout_url" not in listed[rows[1].pk] and "is_pay_as_you_go" not in listed[rows[1].pk]


@pytest.mark.parametrize("query", [{"per_page": 0}, {"per_page": 101}, {"page": 0}, {"page": "x"}])
def test_a_page_outside_the_bounds_is_refused(hosting, partner, query):
    assert hosting.get("/v1/hosting/mailboxes", query).status_code == 422
