"""The portal's settings pages: the partner's default lapse action, and API keys (created and shown
once, scopes offered by account kind, inline errors, usage chart, revoke), with tenant isolation."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from mailcore.partners.services import hosting_partner_enable
from mailcore.apikeys.models import ApiKey, ApiKeyDailyUsage
from mailcore.apikeys.scopes import PARTNER_SCOPES, USER_SCOPES
from mailcore.apikeys.services import api_key_create

pytestmark = pytest.mark.django_db

SETTINGS = "/portal/settings/"
LAPSE = "/portal/settings/lapse-action/"
NEW_KEY = "/portal/settings/api-keys/new/"
HTMX = {"HTTP_HX_REQUEST": "true"}
RAW_KEY = re.compile(r"mk_[A-Za-z0-9]+_[A-Za-z0-9_-]{32,}")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def partner(alice):
    return hosting_partner_enable(account=alice.account, status="active")


@pytest.fixture
def key(alice):
    key, _ = api_key_create(account=alice.account, created_by=alice, name="Billing sync", scopes=["send"])
    return key


def field_errors(html: str, field: str) -> str:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.DOTALL)
    return found.group(1) if found else ""


def key_page(key, suffix="") -> str:
    return f"/portal/settings/api-keys/{key.pk}/{suffix}"


# the settings page and the lapse action


def test_an_account_that_is_not_a_partner_sees_api_keys_and_no_lapse_setting(client, charlie):
    client.force_login(charlie)
    response = client.get(SETTINGS)
    html = response.content.decode()
    assert response.status_code == 200
    assert "No API keys yet" in html and "Create your first key" in html
    assert "When a mailbox lapses" not in html
    assert 'href="/portal/settings/" aria-current="page">Settings</a>' in html


def test_a_partner_sees_the_lapse_setting_with_the_current_value_chosen(alice_client, partner):
    html = alice_client.get(SETTINGS).content.decode()
    assert "When a mailbox lapses" in html
    assert re.search(r'<input type="radio" name="default_client_lapse_action" value="suspend"[^>]*checked', html)
    assert 'name="csrfmiddlewaretoken"' in html


def test_a_pending_partner_has_no_lapse_setting_yet(client, charlie):
    hosting_partner_enable(account=charlie.account, status="pending")
    client.force_login(charlie)
    assert "When a mailbox lapses" not in client.get(SETTINGS).content.decode()
    assert client.post(LAPSE, {"default_client_lapse_action": "downgrade_free"}).status_code == 404
    assert charlie.account.partner.default_client_lapse_action == "suspend"


def test_changing_the_lapse_action_saves_it_and_says_so(alice_client, partner):
    response = alice_client.post(LAPSE, {"default_client_lapse_action": "downgrade_free"}, follow=True)
    partner.refresh_from_db()
    assert response.redirect_chain == [(f"{SETTINGS}#lapse-action", 302)]
    assert partner.default_client_lapse_action == "downgrade_free"
    assert "Lapsed mailboxes now follow “Downgrade to Free”" in response.content.decode()


def test_changing_the_lapse_action_by_htmx_swaps_its_card(alice_client, partner):
    response = alice_client.post(LAPSE, {"default_client_lapse_action": "downgrade_free"}, **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="lapse-action"')
    assert re.search(r'value="downgrade_free"[^>]*checked', html)
    assert 'id="messages"' in html and "Saved." in html


def test_an_unknown_lapse_action_is_refused_inline_and_nothing_changes(alice_client, partner):
    html = alice_client.post(LAPSE, {"default_client_lapse_action": "delete_everything"}).content.decode()
    partner.refresh_from_db()
    assert "Select a valid choice" in field_errors(html, "default_client_lapse_action")
    assert partner.default_client_lapse_action == "suspend"


def test_the_lapse_action_cannot_be_set_by_an_account_that_is_not_a_partner(client, charlie):
    client.force_login(charlie)
    assert client.post(LAPSE, {"default_client_lapse_action": "suspend"}).status_code == 404


# creating a key


def test_the_form_offers_account_scopes_with_explanations_to_everyone(client, charlie):
    client.force_login(charlie)
    html = client.get(NEW_KEY).content.decode()
    for scope, text in USER_SCOPES.items():
        assert f'value="{scope}"' in html and text in html
    for scope in PARTNER_SCOPES:
        assert f'value="{scope}"' not in html
    assert re.search(r'<input type="checkbox" name="scopes" value="send"[^>]*checked', html)


def test_the_form_offers_partner_scopes_to_partners(alice_client, partner):
    html = alice_client.get(NEW_KEY).content.decode()
    assert "Hosting partner</legend>" in html
    for scope, text in PARTNER_SCOPES.items():
        assert f'value="{scope}"' in html and text in html


def test_creating_a_key_shows_it_once_and_never_again(alice_client, alice):
    response = alice_client.post(NEW_KEY, {"name": "Billing sync", "scopes": ["send", "domains:read"],
                                           "expiry": "30", "allowed_ips": "203.0.113.10\n\n198.51.100.0/24 ",
                                           "blocked_ips": ""})
    html = response.content.decode()
    key = ApiKey.objects.get(account=alice.account)
    shown = RAW_KEY.findall(html)
    assert response.status_code == 200
    assert len(shown) == 1 and shown[0].startswith(f"{key.key_prefix}_")
    assert (key.name, key.scopes, key.allowed_ips, key.blocked_ips) == (
        "Billing sync", ["send", "domains:read"], ["203.0.113.10/32", "198.51.100.0/24"], None)
    assert timedelta(days=29, hours=23) < key.expires_at - timezone.now() <= timedelta(days=30)
    assert 'data-copy-target="new-api-key"' in html and "won't be shown again" in html
    assert '<script src="/static/js/copy.js" defer></script>' in html
    assert "no-store" in response["Cache-Control"]
    assert RAW_KEY.findall(alice_client.get(SETTINGS).content.decode()) == []
    assert RAW_KEY.findall(alice_client.get(key_page(key)).content.decode()) == []
    assert f"{key.key_prefix}…" in alice_client.get(SETTINGS).content.decode()


def test_creating_by_htmx_swaps_the_form_for_the_key(alice_client, alice):
    response = alice_client.post(NEW_KEY, {"name": "CI", "scopes": ["send"]}, **HTMX)
    html = response.content.decode()
    assert html.startswith('<section id="api-key-form"')
    assert "<html" not in html
    assert len(RAW_KEY.findall(html)) == 1
    assert "API key “CI” created" in html


def test_a_key_without_expiry_never_expires(alice_client, alice):
    alice_client.post(NEW_KEY, {"name": "Forever", "scopes": ["send"], "expiry": ""})
    assert ApiKey.objects.get(account=alice.account).expires_at is None


@pytest.mark.parametrize("data, field, message", [
    ({"name": "K", "scopes": ["send"], "allowed_ips": "203.0.113.10\nnope"}, "allowed_ips",
     "&#x27;nope&#x27; is not an IP address or CIDR"),
    ({"name": "K", "scopes": ["send"], "blocked_ips": "10.0.0.0/33"}, "blocked_ips", "is not an IP address or CIDR"),
    ({"name": "K"}, "scopes", "Choose at least one scope."),
    ({"name": "K", "scopes": ["partner:stats:read"]}, "scopes", "Select a valid choice"),
    ({"name": "", "scopes": ["send"]}, "name", "This field is required."),
    ({"name": "K", "scopes": ["send"], "expiry": "9999"}, "expiry", "Select a valid choice"),
])
def test_invalid_input_is_shown_next_to_its_field_and_no_key_is_made(alice_client, alice, data, field, message):
    response = alice_client.post(NEW_KEY, data)
    html = response.content.decode()
    assert response.status_code == 200
    assert message in field_errors(html, field)
    assert ApiKey.objects.count() == 0
    assert RAW_KEY.findall(html) == []


def test_an_invalid_address_by_htmx_comes_back_with_focus_on_the_field(alice_client, alice):
    html = alice_client.post(NEW_KEY, {"name": "K", "scopes": ["send", "webhooks"], "allowed_ips": "nope"},
                             **HTMX).content.decode()
    assert html.startswith('<section id="api-key-form"')
    assert re.search(r'<textarea name="allowed_ips"[^>]*autofocus', html)
    assert re.search(r'value="webhooks"[^>]*checked', html)
    assert ApiKey.objects.count() == 0


# the list, the key's page and its usage chart


def test_the_key_list_takes_a_bounded_number_of_queries(alice_client, alice, django_assert_max_num_queries):
    for n in range(10):
        api_key_create(account=alice.account, created_by=alice, name=f"Key {n}", scopes=["send", "webhooks"])
    with django_assert_max_num_queries(7):
        html = alice_client.get(SETTINGS).content.decode()
    assert html.count('href="/portal/settings/api-keys/') >= 10


def test_the_list_shows_each_keys_prefix_scopes_status_and_expiry(alice_client, alice, key):
    revoked, _ = api_key_create(account=alice.account, created_by=alice, name="Old", scopes=["send"],
                                expires_at=timezone.now() + timedelta(days=3))
    ApiKey.objects.filter(pk=revoked.pk).update(is_active=False)
    html = alice_client.get(SETTINGS).content.decode()
    assert f"<code class=\"nowrap\">{key.key_prefix}…</code>" in html
    assert "Active</span>" in html and "Revoked</span>" in html
    assert html.count(f'href="{key_page(key, "revoke/")}"') == 1
    assert f'href="{key_page(revoked, "revoke/")}"' not in html


def test_the_usage_chart_draws_a_bar_a_day_scaled_to_the_busiest(alice_client, key):
    today = timezone.now().date()
    ApiKeyDailyUsage.objects.create(api_key=key, date=today, count=40)
    ApiKeyDailyUsage.objects.create(api_key=key, date=today - timedelta(days=2), count=10)
    ApiKeyDailyUsage.objects.create(api_key=key, date=today - timedelta(days=40), count=999)
    html = alice_client.get(key_page(key)).content.decode()
    bars = re.findall(r'<rect class="chart__bar[^"]*" x="(\d+)" y="0" width="8"\s+height="(\d+)">', html)
    assert len(bars) == 30
    assert bars[-1] == ("290", "100") and bars[-3] == ("270", "25") and bars[0] == ("0", "0")
    assert "chart__bar--today" in html
    assert 'role="img"' in html and "50 in all, at most 40 in a day" in html
    for label, value in (("Today", 40), ("Last 7 days", 50), ("Last 30 days", 50)):
        assert f"<dt>{label}</dt><dd>{value}</dd>" in html


def test_a_key_without_requests_says_so(alice_client, key):
    html = alice_client.get(key_page(key)).content.decode()
    assert "No requests in the last 30 days" in html
    assert html.count('height="0"><title>') == 30


# revoke


def test_revoke_asks_for_confirmation_without_javascript(alice_client, key):
    html = alice_client.get(key_page(key, "revoke/")).content.decode()
    key.refresh_from_db()
    assert "Revoke this API key?" in html
    assert f'action="{key_page(key, "revoke/")}"' in html
    assert key.is_active is True


def test_revoking_refuses_the_key_from_then_on(alice_client, api, key):
    _, raw = api_key_create(account=key.account, created_by=None, name="Second", scopes=["send"])
    second = ApiKey.objects.get(name="Second")
    assert api.get("/subscriptions/me", HTTP_X_API_KEY=raw).status_code == 200
    response = alice_client.post(key_page(second, "revoke/"), follow=True)
    second.refresh_from_db()
    assert response.redirect_chain == [(f"{SETTINGS}#api-keys", 302)]
    assert "API key “Second” revoked" in response.content.decode()
    assert second.is_active is False
    assert api.get("/subscriptions/me", HTTP_X_API_KEY=raw).status_code == 401


def test_revoking_by_htmx_sends_the_browser_back_to_the_list(alice_client, key):
    response = alice_client.post(key_page(key, "revoke/"), **HTMX)
    key.refresh_from_db()
    assert response["HX-Redirect"] == f"{SETTINGS}#api-keys"
    assert key.is_active is False


@pytest.mark.parametrize("suffix, method", [("", "get"), ("revoke/", "get"), ("revoke/", "post")])
def test_another_accounts_key_is_404_and_untouched(client, charlie, key, suffix, method):
    client.force_login(charlie)
    response = getattr(client, method)(key_page(key, suffix))
    key.refresh_from_db()
    assert response.status_code == 404
    assert key.is_active is True
