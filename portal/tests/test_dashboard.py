import pytest

from mailcore.partners.services import hosting_partner_enable

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
