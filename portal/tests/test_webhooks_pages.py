"""The portal's webhook pages: endpoints created, paused, rotated, tested and deleted; the deliveries
log with retry and replay; htmx partials; the plan gate and tenant isolation."""
import re

import pytest

from mailcore.events.services import emit
from mailcore.fieldcrypt import decrypt
from testkit.factories import UserFactory
from mailcore.events.models import WebhookDelivery, WebhookEndpoint
from mailcore.webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db

LIST = "/portal/webhooks/"
HTMX = {"HTTP_HX_REQUEST": "true"}
SECRET = re.compile(r"whsec_[A-Za-z0-9_-]{20,}")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def endpoint(alice):
    endpoint, _ = endpoint_create(account=alice.account, url="https://hooks.example.com/mailwell",
                                  events=["email.received", "email.sent"])
    return endpoint


def dead_delivery(endpoint) -> WebhookDelivery:
    event = emit(account=endpoint.account, name="email.received",
                 data={"message_id": "<m1@example.com>", "subject": "<b>Hello</b> & welcome"})
    delivery = WebhookDelivery.objects.get(endpoint=endpoint, event=event)
    delivery.status, delivery.attempts, delivery.response_status = "dead", 5, 503
    delivery.response_body, delivery.last_error = "upstream down", "the endpoint answered 503"
    delivery.save()
    return delivery


def page(endpoint, suffix="") -> str:
    return f"/portal/webhooks/{endpoint.pk}/{suffix}"


# the list and the create form


def test_the_list_shows_an_empty_state_and_the_form_with_grouped_events(alice_client):
    response = alice_client.get(LIST)
    html = response.content.decode()
    assert response.status_code == 200
    assert "No endpoints yet" in html
    assert 'name="csrfmiddlewaretoken"' in html
    for text in ("Email", "Mailboxes", "Domains", "Hosting partner", "email.bounced", "A sent email hard-bounces",
                 '<label class="field__label" for="id_url">', '<label class="field__label" for="id_allowed_ips">'):
        assert text in html, text
    assert 'href="/portal/webhooks/" aria-current="page">Webhooks</a>' in html


def test_creating_an_endpoint_shows_its_secret_once(alice_client, alice):
    response = alice_client.post(LIST, {"url": "https://hooks.example.com/in", "events": ["email.received",
                                                                                        "domain.verified"],
                                        "allowed_ips": "203.0.113.10\n\n 198.51.100.0/24 \n"})
    html = response.content.decode()
    endpoint = WebhookEndpoint.objects.get(account=alice.account)
    secret = decrypt(endpoint.secret_encrypted)
    assert response.status_code == 200
    assert (endpoint.url, endpoint.events, endpoint.allowed_ips) == (
        "https://hooks.example.com/in", ["email.received", "domain.verified"], ["203.0.113.10/32", "198.51.100.0/24"])
    assert SECRET.findall(html) == [secret]
    assert 'class="copy-field"' in html and 'data-copy-target="new-secret"' in html
    assert "won't be shown again" in html
    assert "no-store" in response["Cache-Control"]
    assert '<script src="/static/js/copy.js" defer></script>' in html
    assert SECRET.findall(alice_client.get(LIST).content.decode()) == []
    assert SECRET.findall(alice_client.get(page(endpoint)).content.decode()) == []


def test_creating_by_htmx_swaps_the_form_for_the_secret_and_refreshes_the_table(alice_client, alice):
    response = alice_client.post(LIST, {"url": "https://hooks.example.com/in", "events": ["email.sent"]}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="endpoint-form"')
    assert "<html" not in html
    assert '<template><section id="endpoints" class="card" aria-labelledby="endpoints-heading" hx-swap-oob="true">' \
        in html
    assert "https://hooks.example.com/in" in html
    assert SECRET.findall(html) == [decrypt(WebhookEndpoint.objects.get(account=alice.account).secret_encrypted)]
    assert 'id="messages"' in html and "Endpoint created" in html


@pytest.mark.parametrize("data, field, message", [
    ({"url": "http://hooks.example.com/in", "events": ["email.sent"]}, "url", "the URL must use https"),
    ({"url": "not a url", "events": ["email.sent"]}, "url", "Enter a valid URL."),
    ({"url": "https://hooks.example.com/in"}, "events", "Choose at least one event."),
    ({"url": "https://hooks.example.com/in", "events": ["email.teleported"]}, "events", "Select a valid choice."),
    ({"url": "https://hooks.example.com/in", "events": ["email.sent"], "allowed_ips": "nope"}, "allowed_ips", "nope"),
])
def test_invalid_input_is_shown_next_to_its_field_and_nothing_is_created(alice_client, alice, data, field, message):
    response = alice_client.post(LIST, data)
    html = response.content.decode()
    assert response.status_code == 200
    errors = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.DOTALL)
    assert errors and message in errors.group(1)
    assert WebhookEndpoint.objects.filter(account=alice.account).count() == 0
    assert SECRET.findall(html) == []


def test_invalid_input_by_htmx_gets_the_form_back_with_its_errors(alice_client, alice):
    response = alice_client.post(LIST, {"url": "http://hooks.example.com/in", "events": ["email.sent"]}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="endpoint-form"')
    assert 'id="id_url_error"' in html and "the URL must use https" in html
    assert 'value="email.sent"' in html and "checked" in html
    assert WebhookEndpoint.objects.count() == 0


def test_the_list_shows_each_endpoint_with_its_events_and_state(alice_client, endpoint):
    endpoint.is_active = False
    endpoint.save()
    html = alice_client.get(LIST).content.decode()
    assert f'href="/portal/webhooks/{endpoint.pk}/">https://hooks.example.com/mailwell</a>' in html
    assert '<span class="badge badge--event">email.received</span>' in html
    assert '<span class="badge badge--dot badge--warn">Paused</span>' in html
    assert "No endpoints yet" not in html


# the endpoint page


def test_the_endpoint_page_shows_its_settings_and_an_empty_log(alice_client, endpoint):
    response = alice_client.get(page(endpoint))
    html = response.content.decode()
    assert response.status_code == 200
    for text in ("https://hooks.example.com/mailwell", "email.sent", "Any public address.", "Pause deliveries",
                 "Send test event", "Rotate secret", "Delete endpoint", "No deliveries yet"):
        assert text in html, text
    assert SECRET.findall(html) == []


def test_pausing_and_resuming_without_javascript(alice_client, endpoint):
    response = alice_client.post(page(endpoint, "active/"), {"is_active": "false"})
    assert (response.status_code, response["Location"]) == (302, page(endpoint))
    endpoint.refresh_from_db()
    assert endpoint.is_active is False
    html = alice_client.get(page(endpoint)).content.decode()
    assert "Endpoint paused" in html and "Resume deliveries" in html
    alice_client.post(page(endpoint, "active/"), {"is_active": "true"})
    endpoint.refresh_from_db()
    assert endpoint.is_active is True


def test_pausing_twice_keeps_it_paused(alice_client, endpoint):
    alice_client.post(page(endpoint, "active/"), {"is_active": "false"})
    alice_client.post(page(endpoint, "active/"), {"is_active": "false"})
    endpoint.refresh_from_db()
    assert endpoint.is_active is False


def test_pausing_by_htmx_returns_the_status_card_only(alice_client, endpoint):
    response = alice_client.post(page(endpoint, "active/"), {"is_active": "false"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="endpoint-status"')
    assert "<html" not in html and "Deliveries</h2>" not in html
    assert "Paused</span>" in html and "Endpoint paused" in html


def test_rotating_shows_a_new_secret_once(alice_client, endpoint):
    old = decrypt(endpoint.secret_encrypted)
    confirm = alice_client.get(page(endpoint, "rotate-secret/"))
    assert confirm.status_code == 200 and "Rotate the signing secret?" in confirm.content.decode()
    assert decrypt(WebhookEndpoint.objects.get().secret_encrypted) == old
    response = alice_client.post(page(endpoint, "rotate-secret/"))
    new = decrypt(WebhookEndpoint.objects.get().secret_encrypted)
    assert response.status_code == 200 and new != old
    assert SECRET.findall(response.content.decode()) == [new]
    assert "no-store" in response["Cache-Control"]
    assert SECRET.findall(alice_client.get(page(endpoint)).content.decode()) == []


def test_rotating_by_htmx_swaps_the_secret_card(alice_client, endpoint):
    response = alice_client.post(page(endpoint, "rotate-secret/"), **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="signing-secret"')
    assert SECRET.findall(html) == [decrypt(WebhookEndpoint.objects.get().secret_encrypted)]


def test_deleting_asks_first_then_deletes(alice_client, endpoint):
    confirm = alice_client.get(page(endpoint, "delete/"))
    assert confirm.status_code == 200 and "Delete this endpoint?" in confirm.content.decode()
    assert WebhookEndpoint.objects.count() == 1
    response = alice_client.post(page(endpoint, "delete/"))
    assert (response.status_code, response["Location"]) == (302, LIST)
    assert WebhookEndpoint.objects.count() == 0
    assert "Endpoint https://hooks.example.com/mailwell deleted" in alice_client.get(LIST).content.decode()


def test_deleting_by_htmx_sends_the_browser_to_the_list(alice_client, endpoint):
    response = alice_client.post(page(endpoint, "delete/"), **HTMX)
    assert response["HX-Redirect"] == LIST
    assert WebhookEndpoint.objects.count() == 0


@pytest.mark.parametrize("suffix", ["active/", "test/", "deliveries/1/retry/", "deliveries/1/replay/"])
def test_post_only_actions_refuse_get(alice_client, endpoint, suffix):
    assert alice_client.get(page(endpoint, suffix)).status_code == 405
    endpoint.refresh_from_db()
    assert endpoint.is_active is True


def test_a_post_without_a_csrf_token_is_refused(alice, endpoint):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(page(endpoint, "active/"), {"is_active": "false"}).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.is_active is True


# sending a test


def test_a_test_to_an_unsafe_address_shows_the_refusal(alice_client, alice, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    endpoint, _ = endpoint_create(account=alice.account, url="https://10.0.0.1/x", events=["email.received"])
    response = alice_client.post(page(endpoint, "test/"))
    html = response.content.decode()
    assert response.status_code == 200
    reason = "10.0.0.1 is a private address"
    assert f"<strong>Not delivered</strong>: {reason}." in html


def test_a_test_by_htmx_shows_the_answer_in_place(alice_client, alice, receiver):
    endpoint, receiver.secret = endpoint_create(account=alice.account, url=receiver.url(), events=["email.sent"])
    receiver.body = b'{"thanks": "<yes>"}'
    response = alice_client.post(page(endpoint, "test/"), **HTMX)
    html = response.content.decode()
    assert "<html" not in html and 'id="test-result"' not in html
    assert "Delivered" in html and "the endpoint answered <strong>200</strong>" in html
    assert "{&quot;thanks&quot;: &quot;&lt;yes&gt;&quot;}" in html
    assert len(receiver.hits) == 1 and receiver.hits[0].signature_valid
    assert receiver.hits[0].envelope["event"] == "email.received"


# the deliveries log


def test_the_log_shows_each_delivery_with_its_payload_escaped(alice_client, endpoint):
    delivery = dead_delivery(endpoint)
    html = alice_client.get(page(endpoint)).content.decode()
    row = re.search(rf'<tbody id="delivery-{delivery.pk}".*?</tbody>', html, re.DOTALL).group(0)
    assert "<code class=\"delivery__event\">email.received</code>" in row
    assert '<span class="badge badge--dot badge--danger">Dead</span>' in row
    assert '<td class="num" data-label="Attempts">5</td>' in row
    assert '<td class="num" data-label="Response">503</td>' in row
    assert "&quot;subject&quot;: &quot;&lt;b&gt;Hello&lt;/b&gt; &amp; welcome&quot;" in row  # pretty, escaped
    assert '\n  &quot;event&quot;: &quot;email.received&quot;,' in row
    assert "upstream down" in row and "Last error: the endpoint answered 503" in row
    assert ">Retry<" in row and ">Replay<" in row


def test_retrying_a_dead_delivery_without_javascript(alice_client, alice, receiver):
    endpoint, receiver.secret = endpoint_create(account=alice.account, url=receiver.url(), events=["email.received"])
    delivery = dead_delivery(endpoint)
    response = alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/retry/"))
    assert (response.status_code, response["Location"]) == (302, f"{page(endpoint)}#delivery-{delivery.pk}")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 1, 200)
    assert len(receiver.hits) == 1
    html = alice_client.get(page(endpoint)).content.decode()
    assert f"Delivery #{delivery.pk} retried: the endpoint answered 200." in html


def test_retrying_by_htmx_returns_the_row_only(alice_client, alice, settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    endpoint, _ = endpoint_create(account=alice.account, url="https://10.0.0.1/x", events=["email.received"])
    delivery = dead_delivery(endpoint)
    response = alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/retry/"), **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith(f'<tbody id="delivery-{delivery.pk}" class="delivery">')
    assert "<html" not in html and "<table" not in html
    assert '<span class="badge badge--dot badge--danger">Failed</span>' in html
    assert "<template><div id=\"messages\"" in html and "retried and failed again" in html
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 1)


def test_a_delivered_delivery_is_not_retried(alice_client, endpoint):
    delivery = dead_delivery(endpoint)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="delivered", attempts=1, response_status=200)
    html = alice_client.get(page(endpoint)).content.decode()
    assert ">Retry<" not in html
    alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/retry/"))
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    html = alice_client.get(page(endpoint)).content.decode()
    assert "was not retried: only a dead or failed delivery can be retried" in html


def test_replaying_adds_a_new_delivery_of_the_same_event(alice_client, endpoint):
    delivery = dead_delivery(endpoint)
    response = alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/replay/"))
    assert (response.status_code, response["Location"]) == (302, f"{page(endpoint)}#deliveries")
    replay = WebhookDelivery.objects.exclude(pk=delivery.pk).get()
    assert (replay.event_id, replay.replayed_from_id, replay.status) == (delivery.event_id, delivery.pk, "pending")
    html = alice_client.get(page(endpoint)).content.decode()
    assert f'replay of <a href="#delivery-{delivery.pk}">#{delivery.pk}</a>' in html
    assert f"Delivery #{delivery.pk} replayed as #{replay.pk}" in html


def test_replaying_by_htmx_returns_the_log_only(alice_client, endpoint):
    delivery = dead_delivery(endpoint)
    response = alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/replay/"), **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="deliveries"')
    assert "<html" not in html and 'id="endpoint-status"' not in html
    assert html.count('class="delivery"') == 2


def test_refreshing_the_log_by_htmx_returns_the_log_only(alice_client, endpoint):
    dead_delivery(endpoint)
    response = alice_client.get(page(endpoint), HTTP_HX_TARGET="deliveries", **HTMX)
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="deliveries"') and "<html" not in html


def test_a_delivery_of_another_endpoint_is_404(alice_client, alice, endpoint):
    other, _ = endpoint_create(account=alice.account, url="https://other.example.com/", events=["email.received"])
    delivery = dead_delivery(other)
    before = WebhookDelivery.objects.count()
    assert alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/retry/")).status_code == 404
    assert alice_client.post(page(endpoint, f"deliveries/{delivery.pk}/replay/")).status_code == 404
    assert WebhookDelivery.objects.count() == before
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("dead", 5)


# the plan gate and strangers


def test_a_plan_without_webhooks_sees_the_upgrade_page(client, charlie):
    client.force_login(charlie)
    response = client.get(LIST)
    html = response.content.decode()
    assert response.status_code == 403
    assert "Upgrade your plan to use webhooks" in html
    assert "Webhooks needs the Premium plan" in html
    response = client.post(LIST, {"url": "https://hooks.example.com/in", "events": ["email.sent"]})
    assert response.status_code == 403
    assert WebhookEndpoint.objects.count() == 0


def test_an_approved_partner_on_the_free_plan_is_offered_webhooks_and_the_dashboard_says_so(client, charlie):
    from mailcore.partners.services import hosting_partner_enable

    hosting_partner_enable(account=charlie.account, status="active")
    client.force_login(charlie)
    page = client.get(LIST)
    assert page.status_code == 200 and "Webhooks needs the Premium plan" not in page.content.decode()
    response = client.post(LIST, {"url": "https://hooks.example.com/in", "events": ["partner_mailbox.created"]})
    assert response.status_code in (200, 302)
    assert WebhookEndpoint.objects.filter(account=charlie.account).count() == 1
    dashboard = client.get("/").content.decode()
    assert '<span class="visually-hidden">Included: </span>Webhooks' in dashboard


@pytest.mark.parametrize("method, suffix", [
    ("get", ""), ("get", "rotate-secret/"), ("get", "delete/"), ("post", "active/"), ("post", "test/"),
    ("post", "rotate-secret/"), ("post", "delete/"), ("post", "deliveries/{delivery}/retry/"),
    ("post", "deliveries/{delivery}/replay/"),
])
def test_strangers_get_404_for_alices_endpoint(client, charlie, endpoint, method, suffix):
    delivery = dead_delivery(endpoint)
    premium_stranger = UserFactory(account__plan_code="premium")
    secret = endpoint.secret_encrypted
    for stranger in (charlie, premium_stranger):
        client.force_login(stranger)
        response = getattr(client, method)(page(endpoint, suffix.format(delivery=delivery.pk)))
        assert response.status_code == 404
    endpoint.refresh_from_db()
    assert (endpoint.is_active, endpoint.secret_encrypted) == (True, secret)
    assert WebhookDelivery.objects.count() == 1


def test_the_pages_require_login(client, endpoint):
    for url in (LIST, page(endpoint)):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_every_invalid_field_is_reported_at_once(alice_client):
    response = alice_client.post(LIST, {"url": "http://hooks.example.com/in", "allowed_ips": "10.0.0.1\nnope"})
    html = response.content.decode()
    for field in ("url", "events", "allowed_ips"):
        assert f'id="id_{field}_error"' in html, field
    assert "The endpoint was not created" in html
    assert 'value="10.0.0.1\nnope"' not in html and "10.0.0.1\nnope</textarea>" in html
    assert WebhookEndpoint.objects.count() == 0
