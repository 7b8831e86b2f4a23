"""Every HTML page without a parameter in its URL, walked from the URL patterns, as a stranger, an
account user and a webmail owner: each carries the Content-Security-Policy (scripts from our own
origin only, never inline) and refuses to be framed. A new page is walked without being listed."""
import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from mailcore.store.factory import store_for
from testkit.factories import make_mailbox
from testkit.pages import policy_problems

pytestmark = pytest.mark.django_db

PASSWORD = "owner password 1"


def _paths(patterns, prefix: str = "") -> list[str]:
    found = []
    for pattern in patterns:
        route = str(pattern.pattern).lstrip("^").rstrip("$").replace("\\Z", "")
        if "<" in route or "(" in route or "\\" in route:
            continue  # a page with a parameter: its id belongs to someone (the stranger tests walk those)
        if isinstance(pattern, URLResolver):
            found += _paths(pattern.url_patterns, prefix + route)
        elif isinstance(pattern, URLPattern):
            found.append("/" + prefix + route)
    return sorted(set(found))


PAGES = [path for path in _paths(get_resolver().url_patterns)
         if path.startswith(("/portal/", "/webmail/", "/accounts/", "/console/")) or path == "/"]


@pytest.fixture
def visitors(client, alice, django_user_model):
    from django.test import Client

    account_user = Client()
    account_user.force_login(alice)
    mailbox = make_mailbox(alice.account, "ann@example.test", password=PASSWORD)
    store_for(mailbox).ensure_folders()
    owner = Client()
    assert owner.post("/webmail/", {"address": mailbox.address, "password": PASSWORD}).status_code == 302
    return {"stranger": client, "account user": account_user, "mailbox owner": owner}


def test_every_html_page_forbids_inline_script_and_framing(visitors):
    checked = 0
    for who, visitor in visitors.items():
        for path in PAGES:
            response = visitor.get(path)
            if response.status_code != 200 or not response.get("Content-Type", "").startswith("text/html"):
                continue
            assert policy_problems(response) == [], (path, who)
            checked += 1
    assert checked >= 20  # the walk reaches the pages (login forms, dashboards, webmail, settings)
