"""Open and click tracking: a pixel and signed redirects, one event per hit, never an open redirect."""
import re

import pytest
from django.core import signing

from testkit.clients import new_key
from mailcore.events.models import Event
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.factories import make_mailbox
from testkit.smtp_sink import smtp_sink

pytestmark = pytest.mark.django_db


@pytest.fixture
def delivered_html(settings):
    """Send a tracked message through a real relay and return the HTML as delivered."""

    def deliver(user, address, **fields):
        make_mailbox(user.account, address)
        with smtp_sink() as (port, sink):
            settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
            from rest_framework.test import APIClient

            body = {"from_email": address, "to": ["bob@remote.test"], "subject": "News",
                    "body_html": '<p>Read <a href="https://example.test/article?id=1&amp;x=2">this</a></p>', **fields}
            result = APIClient().post("/mail/send", body, format="json", HTTP_X_API_KEY=new_key(user)).json()
            outbound_dispatch_due()
            import email
            from email import policy

            message = email.message_from_bytes(sink.messages[0].content, policy=policy.default)
            return result, message.get_body(("html",)).get_content()

    return deliver


def test_opens_fire_email_opened_once_per_hit(client, alice, delivered_html, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    result, html = delivered_html(alice, "news@example.test", track_opens=True)
    pixel = re.search(r'<img src="http://testserver(/t/o/[^"]+\.gif)"', html).group(1)
    for _ in range(2):
        response = client.get(pixel, HTTP_USER_AGENT="Mozilla/5.0 Thunderbird/128.0", REMOTE_ADDR="198.51.100.4")
        assert response.status_code == 200 and response["Content-Type"] == "image/gif"
    opened = [e.data for e in Event.objects.filter(name="email.opened")]
    assert len(opened) == 2
    assert opened[0]["message_id"] == result["message_id"]
    assert (opened[0]["location_country"], opened[0]["client"]) == ("XX", "Thunderbird")
    assert opened[0]["opened_at"].endswith("Z")


def test_clicks_redirect_to_the_signed_url_and_fire_per_click(client, alice, delivered_html, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    result, html = delivered_html(alice, "news@example.test", track_opens=True)
    link = re.search(r'<a href="http://testserver(/t/c/[^"]+)"', html).group(1)
    assert "example.test/article" not in html.split("/t/c/")[0][-50:]  # the original URL is not in the link
    for _ in range(3):
        response = client.get(link)
        assert response.status_code == 302
        assert response["Location"] == "https://example.test/article?id=1&x=2"
    clicked = [e.data for e in Event.objects.filter(name="email.clicked")]
    assert [c["url"] for c in clicked] == ["https://example.test/article?id=1&x=2"] * 3
    assert clicked[0]["message_id"] == result["message_id"]


def test_a_tampered_or_forged_link_is_404_and_records_nothing(client, alice, delivered_html, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    result, html = delivered_html(alice, "news@example.test", track_opens=True)
    link = re.search(r'<a href="http://testserver(/t/c/[^"]+)"', html).group(1)
    assert client.get(link[:-3] + "abc").status_code == 404
    forged = signing.dumps([result["message_id"], "https://evil.test"], salt="not-our-salt", compress=True)
    assert client.get(f"/t/c/{forged}").status_code == 404
    assert client.get("/t/o/garbage.gif").status_code == 404
    assert not Event.objects.filter(name__in=["email.clicked", "email.opened"]).exists()


def test_tracking_is_silently_ignored_without_read_receipts(charlie, delivered_html):
    result, html = delivered_html(charlie, "me@charlie.test", track_opens=True)
    assert "/t/o/" not in html and "/t/c/" not in html
    assert 'href="https://example.test/article?id=1&amp;x=2"' in html
