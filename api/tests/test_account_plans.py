"""Account plans through a monthly subscription with the local provider: upgrade from Free by
checkout, change between paid plans, downgrade at the period end, renewals and failed renewals
(rehearsed with the provider's clock), and the plan gates following the confirmed plan."""
import pytest
from django.core.management import call_command

from billing.models import Payment, Subscription
from billing.providers.local import LocalProvider
from mailcore.accounts.models import Account
from mailcore.sending.models import MailTemplate
from testkit.clients import new_key

pytestmark = pytest.mark.django_db
RETURN = "https://app.example/billing/done"


@pytest.fixture
def charlie_api(charlie):
    """A signed-in session (changing the plan moves money: never from an API key)."""
    from testkit.clients import login_client

    return login_client(charlie)


def test_an_api_key_cannot_change_the_plan(api, charlie):
    api.credentials(HTTP_X_API_KEY=new_key(charlie, scopes=["send"]))
    response = api.post("/subscriptions/me/plan", {"plan": "pro", "return_url": RETURN}, format="json")
    assert response.status_code == 401 and "session" in response.json()["detail"]


def agent_tools(user) -> int:
    """The agent tool server's plan gate (Pro and Premium), with an API key of the user's account:
    403 outside the plan."""
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_X_API_KEY=new_key(user))
    return client.post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, format="json").status_code


def plan_of(user) -> str:
    return Account.objects.get(pk=user.account_id).plan.code


def upgrade(api, plan, capture, *, paid=True):
    answer = api.post("/subscriptions/me/plan", {"plan": plan, "return_url": RETURN}, format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    if body["status"] == "checkout":
        with capture(execute=True):
            LocalProvider().checkout_complete(body["checkout_url"].rstrip("/").rsplit("/", 1)[-1], paid=paid)
    return body


def clock(capture, *args):
    with capture(execute=True):
        call_command("billing_clock", "advance", *args)


def test_free_upgrades_to_pro_only_when_the_payment_is_confirmed(charlie_api, charlie,
                                                                 django_capture_on_commit_callbacks):
    assert agent_tools(charlie) == 403
    body = charlie_api.post("/subscriptions/me/plan", {"plan": "pro", "return_url": RETURN}, format="json").json()
    assert body["status"] == "checkout" and body["checkout_url"]
    assert plan_of(charlie) == "free"  # not before the provider confirms
    with django_capture_on_commit_callbacks(execute=True):
        LocalProvider().checkout_complete(body["checkout_url"].rstrip("/").rsplit("/", 1)[-1], paid=True)
    assert plan_of(charlie) == "pro"
    me = charlie_api.get("/subscriptions/me").json()
    assert me["plan"] == "pro" and me["features"]["ai_agent_tools"] is True
    assert me["subscription"] | {"current_period_start": None, "current_period_end": None} == {
        "plan": "pro", "status": "active", "current_period_start": None, "current_period_end": None,
        "cancel_at_period_end": False, "amount": 9, "currency": "usd", "payment_provider": "local"}
    assert agent_tools(charlie) == 200
    assert Payment.objects.get(account=charlie.account).amount_minor == 900


def test_a_declined_upgrade_leaves_the_account_on_free(charlie_api, charlie, django_capture_on_commit_callbacks):
    upgrade(charlie_api, "premium", django_capture_on_commit_callbacks, paid=False)
    assert plan_of(charlie) == "free" and charlie_api.get("/subscriptions/me").json()["subscription"] is None


def test_renewals_are_charged_by_the_providers_clock(charlie_api, charlie, django_capture_on_commit_callbacks):
    upgrade(charlie_api, "pro", django_capture_on_commit_callbacks)
    first_end = Subscription.objects.get().current_period_end
    clock(django_capture_on_commit_callbacks, "--days", "31")
    subscription = Subscription.objects.get()
    assert subscription.status == "active" and (subscription.current_period_end - first_end).days == 30
    assert Payment.objects.filter(account=charlie.account).count() == 2
    assert plan_of(charlie) == "pro"


def test_failed_renewals_are_retried_then_drop_the_account_to_free_keeping_its_data(
        charlie_api, charlie, django_capture_on_commit_callbacks):
    upgrade(charlie_api, "pro", django_capture_on_commit_callbacks)
    kept = MailTemplate.objects.create(account=charlie.account, name="kept", subject="s", body_html="<p>b</p>")
    clock(django_capture_on_commit_callbacks, "--days", "31", "--fail-renewals")
    assert Subscription.objects.get().status == "past_due" and plan_of(charlie) == "pro"  # retried: still Pro
    clock(django_capture_on_commit_callbacks, "--days", "10", "--fail-renewals")
    assert Subscription.objects.get().status == "canceled" and plan_of(charlie) == "free"
    assert agent_tools(charlie) == 403  # the gate follows the plan, and the data is kept
    assert MailTemplate.objects.filter(pk=kept.pk).exists()


def test_pro_to_premium_changes_the_subscription_and_to_free_waits_for_the_period_end(
        charlie_api, charlie, django_capture_on_commit_callbacks):
    upgrade(charlie_api, "pro", django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        body = charlie_api.post("/subscriptions/me/plan", {"plan": "premium"}, format="json").json()
    assert body == {"status": "requested", "reference": None, "checkout_url": None}
    assert plan_of(charlie) == "premium"
    assert charlie_api.get("/subscriptions/me").json()["subscription"]["amount"] == 29
    with django_capture_on_commit_callbacks(execute=True):
        charlie_api.post("/subscriptions/me/plan", {"plan": "free"}, format="json")
    me = charlie_api.get("/subscriptions/me").json()
    assert me["plan"] == "premium" and me["subscription"]["cancel_at_period_end"] is True
    clock(django_capture_on_commit_callbacks, "--days", "31")
    assert plan_of(charlie) == "free" and Subscription.objects.get().status == "canceled"
    assert Payment.objects.filter(account=charlie.account).count() == 1  # no renewal charged


@pytest.mark.parametrize("body, status, field", [
    ({"plan": "gold", "return_url": RETURN}, 422, "plan"),
    ({"plan": "pro"}, 422, "return_url"),
    ({"plan": "pro", "return_url": "ftp://x.example/"}, 422, "return_url"),
    ({"plan": "free"}, 400, None),  # already on Free
])
def test_bad_plan_changes_are_refused(charlie_api, body, status, field):
    response = charlie_api.post("/subscriptions/me/plan", body, format="json")
    assert response.status_code == status
    if field:
        assert field in response.json()["errors"]
    assert Subscription.objects.count() == 0


def test_two_paid_upgrade_checkouts_leave_one_subscription_running(charlie_api, charlie,
                                                                    django_capture_on_commit_callbacks):
    from billing.models import LocalSubscription

    first = charlie_api.post("/subscriptions/me/plan", {"plan": "pro", "return_url": RETURN}, format="json").json()
    second = charlie_api.post("/subscriptions/me/plan", {"plan": "premium", "return_url": RETURN},
                              format="json").json()
    for body in (first, second):  # both tabs paid
        with django_capture_on_commit_callbacks(execute=True):
            LocalProvider().checkout_complete(body["checkout_url"].rstrip("/").rsplit("/", 1)[-1], paid=True)
    assert plan_of(charlie) == "premium"
    assert list(Subscription.objects.order_by("id").values_list("plan_code", "status")) == [
        ("pro", "canceled"), ("premium", "active")]
    assert list(LocalSubscription.objects.order_by("id").values_list("status", flat=True)) == ["canceled", "active"]
