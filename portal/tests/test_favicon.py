"""The site icon: every page names it, and /favicon.ico (which browsers ask for where a page names none)
answers, so no page logs a 404 for it (the operator console's pages: test_operator_console.py)."""
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

ICON_LINK = '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'


def _static(client: Client, url: str):
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response, body


@pytest.mark.parametrize("host", ["testserver", "127.0.0.1:9000"])
def test_favicon_ico_redirects_to_the_static_icon(host):
    client = Client(HTTP_HOST=host)

    response = client.get("/favicon.ico")

    assert (response.status_code, response["Location"]) == (302, "/static/favicon.svg")
    icon, body = _static(client, response["Location"])
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/svg+xml")
    assert body.lstrip().startswith(b"<svg")


def test_the_product_pages_link_the_icon(client):
    for url in ("/accounts/login/", "/webmail/"):
        assert ICON_LINK in client.get(url).content.decode(), url
