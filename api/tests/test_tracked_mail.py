"""Tracked and HTML-only mail as delivered at a sink: the open pixel inside the body, a text part that
keeps every link's URL, and a domain's own tracking host used only once its CNAME is seen on DNS."""
import email
import re
from email import policy

import pytest
from rest_framework.test import APIClient

from mailcore.domains.models import Domain
from mailcore.domains.services import domain_verify
from mailcore.events.models import Event
from mailcore.sending.dispatch import outbound_dispatch_due
from testkit.clients import new_key
from testkit.factories import make_mailbox
from testkit.smtp_sink import smtp_sink

pytestmark = pytest.mark.django_db

ARTICLE = "https://example.test/article?id=1&x=2"
HTML_PAGE = ('<html><head><title>News</title></head><body><p>Read <a href="https://example.test/article?id=1&amp;x=2">'
             'this article</a> or <a href="https://example.test/all">https://example.test/all</a>.</p>'
             '<p><a data-no-track href="https://example.test/unsubscribe">Unsubscribe</a></p></body></html>')


@pytest.fixture
def send(settings):
    """Send through a real relay (an SMTP sink) and return the delivered message."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.TRACKING_HOST = "track.mailwell.test"

    def deliver(user, address, **fields):
        if not Domain.objects.filter(name=address.split("@")[1]).exists() or not user.account.mailboxes.filter(
                address=address).exists():
            make_mailbox(user.account, address)
        with smtp_sink() as (port, sink):
            settings.SMTP_URL = f"smtp://127.0.0.1:{port}"
            body = {"from_email": address, "to": ["bob@remote.test"], "subject": "News", **fields}
            response = APIClient().post("/mail/send", body, format="json", HTTP_X_API_KEY=new_key(user))
            assert response.status_code in (200, 201, 202), response.json()
            outbound_dispatch_due()
            [delivered] = sink.messages
        return email.message_from_bytes(delivered.content, policy=policy.default)

    return deliver


def html_and_text(message) -> tuple[str, str]:
    return message.get_body(("html",)).get_content(), message.get_body(("plain",)).get_content()


def test_the_open_pixel_is_inside_the_body_of_a_full_html_document(alice, send):
    html, _ = html_and_text(send(alice, "news@example.test", body_html=HTML_PAGE, track_opens=True))
    pixel = re.search(r'<img src="http://testserver/t/o/[^"]+\.gif"[^>]*>', html)
    assert pixel is not None
    assert pixel.end() < html.rindex("</body>") < html.rindex("</html>")
    assert html.rstrip().endswith("</html>")  # nothing after the document


def test_without_a_body_element_the_pixel_ends_the_html(alice, send):
    html, _ = html_and_text(send(alice, "news@example.test", track_opens=True,
                                 body_html='<html><p>Short <a href="https://example.test/x">news</a></p></html>'))
    assert re.search(r'<img src="http://testserver/t/o/[^"]+\.gif"[^>]*>\r?\n</html>\s*$', html)
    fragment, _ = html_and_text(send(alice, "news@example.test", track_opens=True, body_html="<p>Just a fragment</p>"))
    assert re.search(r'<p>Just a fragment</p>\r?\n<img src="http://testserver/t/o/[^"]+\.gif"[^>]*>\s*$', fragment)


def test_the_text_part_of_tracked_html_only_mail_keeps_every_links_original_url(alice, send):
    html, text = html_and_text(send(alice, "news@example.test", body_html=HTML_PAGE, track_opens=True))
    assert "/t/c/" in html and ARTICLE not in html  # the HTML's links are click-tracked
    assert f"this article ({ARTICLE})" in text
    assert "https://example.test/all." in text and "https://example.test/all (" not in text  # its own label
    assert "Unsubscribe (https://example.test/unsubscribe)" in text
    assert "/t/c/" not in text and "/t/o/" not in text


def test_untracked_html_only_mail_gets_the_same_text_part(charlie, send):
    html, text = html_and_text(send(charlie, "me@charlie.test", body_html=HTML_PAGE))
    assert "/t/o/" not in html
    assert f"this article ({ARTICLE})" in text and "Unsubscribe (https://example.test/unsubscribe)" in text


def test_a_domains_own_tracking_host_is_used_only_once_its_cname_is_seen(alice, send, dns_zone, client):
    first = send(alice, "news@example.test", body_html=HTML_PAGE, track_opens=True)
    assert 'src="http://testserver/t/o/' in html_and_text(first)[0]
    domain = Domain.objects.get(name="example.test")
    dns_zone.set("track.example.test", "CNAME", "elsewhere.test")  # pointing at someone else's host
    domain_verify(domain=domain)
    assert "http://testserver/t/c/" in html_and_text(send(alice, "news@example.test", body_html=HTML_PAGE,
                                                          track_opens=True))[0]
    assert client.get("/internal/tls/allowed", {"domain": "track.example.test"}).status_code == 404

    dns_zone.set("track.example.test", "CNAME", "track.mailwell.test")
    domain_verify(domain=domain)
    html, text = html_and_text(send(alice, "news@example.test", body_html=HTML_PAGE, track_opens=True))
    pixel = re.search(r'<img src="https://track\.example\.test(/t/o/[^"]+\.gif)"', html).group(1)
    link = re.search(r'<a href="https://track\.example\.test(/t/c/[^"]+)"', html).group(1)
    assert "testserver" not in html and "track.example.test" not in text
    assert client.get("/internal/tls/allowed", {"domain": "track.example.test"}).status_code == 200
    assert client.get(pixel, HTTP_HOST="track.example.test").status_code == 200
    clicked = client.get(link, HTTP_HOST="track.example.test")
    assert (clicked.status_code, clicked["Location"]) == (302, ARTICLE)
    assert Event.objects.filter(name="email.opened").count() == 1
    assert client.get("/portal/domains/", HTTP_HOST="track.example.test").status_code == 404  # tracking only

    dns_zone.set("track.example.test", "CNAME", "elsewhere.test")  # removed again: back to the platform's host
    domain_verify(domain=domain)
    assert 'src="http://testserver/t/o/' in html_and_text(send(alice, "news@example.test", body_html=HTML_PAGE,
                                                               track_opens=True))[0]
    assert client.get(pixel, HTTP_HOST="track.example.test").status_code == 400
    assert client.get("/internal/tls/allowed", {"domain": "track.example.test"}).status_code == 404


def test_the_wizard_and_dns_records_name_the_tracking_cname(alice, dns_zone, settings):
    settings.TRACKING_HOST = "track.mailwell.test"
    domain = make_mailbox(alice.account, "news@example.test").domain
    dns_zone.set("track.example.test", "CNAME", "track.mailwell.test")
    domain = domain_verify(domain=domain)
    [record] = [row for row in domain.dns_check if row["key"] == "tracking"]
    assert (record["type"], record["host"], record["value"], record["ok"], record["found_value"]) == (
        "CNAME", "track", "track.mailwell.test", True, "track.mailwell.test")
    assert domain.tracking_host == "track.example.test"
