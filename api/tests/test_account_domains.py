"""/domains: an account's own domains with the DNS records each needs, read with `domains:read`."""
import pytest
from rest_framework.test import APIClient

from testkit.clients import new_key
from mailcore.domains.dkim import dkim_key_for, dkim_public_record
from mailcore.domains.services import domain_create
from testkit.factories import make_domain

pytestmark = pytest.mark.django_db


def keyed(user, scopes) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(user, scopes=scopes))
    return client


def test_a_verified_domain_lists_the_records_to_keep_published(alice):
    domain = make_domain(alice.account, "example.test")
    body = keyed(alice, ["domains:read"]).get("/domains").json()
    assert [row["domain_name"] for row in body] == ["example.test"]
    detail = keyed(alice, ["domains:read"]).get(f"/domains/{domain.pk}").json()
    assert detail["status"] == "verified" and detail["is_verified"] is True
    records = {record["key"]: record for record in detail["dns_records"]}
    assert list(records) == ["mx", "ownership", "spf", "dmarc", "dkim", "mta_sts", "mta_sts_host", "tlsrpt", "tracking"]
    assert records["dkim"]["host"] == "dkim._domainkey"
    assert records["dkim"]["value"] == dkim_public_record(dkim_key_for(domain.name))
    assert [record["required"] for record in records.values()] == [True, True] + [False] * 7
    assert [record["ok"] for record in records.values()] == [True] * 8 + [None]  # the optional one: never seen


def test_a_domain_never_checked_shows_its_records_unchecked(alice):
    domain = domain_create(account=alice.account, name="fresh.test")
    detail = keyed(alice, ["domains:read"]).get(f"/domains/{domain.pk}").json()
    assert detail["status"] == "pending" and detail["verified_at"] is None
    assert {record["ok"] for record in detail["dns_records"]} == {None}


def test_another_accounts_domain_is_404_and_the_scope_is_needed(alice, charlie, stranger):
    domain = make_domain(alice.account, "example.test")
    assert stranger.get(f"/domains/{domain.pk}").status_code == 404
    assert stranger.get("/domains").json() == []
    response = keyed(alice, ["send"]).get("/domains")
    assert response.status_code == 403 and "domains:read" in response.json()["detail"]
