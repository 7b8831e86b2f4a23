"""POST /mail/send's request path after issue 18: what a send costs in queries, and that the leaner
path keeps its guarantees (exact quotas, nothing stored on a refusal, the same 422s)."""
import json

import pytest
from django.db import transaction

from mailcore.apikeys.usage import usage_flush
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.inputs import SendRequest
from mailcore.sending.quota import SendQuotaExceeded
from mailcore.sending.services import mail_send
from mailcore.usage.models import MailboxDailyUsage, MailboxHourlySends
from testkit.clients import new_key
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db

SENDER = "me@charlie.test"  # charlie is on the free plan: 20 sends an hour


@pytest.fixture
def sender(charlie):
    return make_mailbox(charlie.account, SENDER)


@pytest.fixture
def key(charlie, sender, settings):
    settings.API_KEY_USAGE_FLUSH_SECONDS = 3600  # no batched usage write inside the counted requests
    yield new_key(charlie, scopes=["send"])
    usage_flush()  # while this test's key exists: buffered counts must not outlive their rows


def send(api, key, **fields):
    body = {"from_email": SENDER, "to": ["bob@remote.test"], "subject": "Hi", "body_text": "Hello", **fields}
    body = {name: value for name, value in body.items() if value is not None}
    return api.post("/mail/send", body, format="json", HTTP_X_API_KEY=key)


def counts(mailbox) -> tuple[int, int]:
    day = MailboxDailyUsage.objects.filter(mailbox=mailbox).first()
    hour = MailboxHourlySends.objects.filter(mailbox=mailbox).first()
    return (day.sends if day else 0, hour.sends if hour else 0)


def test_a_sandbox_send_is_three_queries_key_mailbox_and_the_row(api, key, django_assert_max_num_queries):
    send(api, key, sandbox=True)  # warm: nothing per process is loaded inside the count
    with django_assert_max_num_queries(3):
        assert send(api, key, sandbox=True).status_code == 200
    assert OutboundMessage.objects.filter(sandbox=True, status="queued").count() == 2


def test_a_send_that_reserves_quota_adds_only_the_two_counter_updates(api, key, sender,
                                                                      django_assert_max_num_queries):
    send(api, key)  # the day's and the hour's rows are created by the first send
    with django_assert_max_num_queries(3 + 2 + 2):  # and the transaction's two ends
        assert send(api, key).status_code == 200
    assert counts(sender) == (2, 2)


def test_the_first_send_of_a_period_creates_its_counters(api, key, sender):
    assert counts(sender) == (0, 0)
    assert send(api, key).status_code == 200
    assert counts(sender) == (1, 1)


def test_an_hourly_refusal_stores_nothing_and_gives_the_day_its_unit_back(api, key, sender):
    for _ in range(20):
        assert send(api, key).status_code == 200
    assert send(api, key).status_code == 429
    assert counts(sender) == (20, 20)
    assert OutboundMessage.objects.count() == 20


def test_a_caller_that_catches_a_refusal_inside_its_transaction_can_go_on(charlie, sender):
    """Campaigns catch SendQuotaExceeded inside their own transaction: mail_send's savepoint keeps it usable."""
    request = SendRequest(from_email=SENDER, to=["bob@remote.test"], body_text="x")
    with transaction.atomic():
        for _ in range(20):
            mail_send(account=charlie.account, user=None, request=request)
        with pytest.raises(SendQuotaExceeded):
            mail_send(account=charlie.account, user=None, request=request)
        assert OutboundMessage.objects.count() == 20  # the transaction still answers
    assert counts(sender) == (20, 20)


def test_a_send_from_a_mailbox_of_another_account_is_422(api, key, alice):
    make_mailbox(alice.account, "ann@alice.test")
    response = send(api, key, from_email="ann@alice.test")
    assert response.status_code == 422
    assert response.json()["errors"]["from_email"] == ["not a mailbox of this account"]


@pytest.mark.parametrize("field", ["body_html", "body_text"])
def test_a_lone_surrogate_in_a_body_is_422_naming_it(api, key, field):
    body = {"from_email": SENDER, "to": ["bob@remote.test"], field: "Hello \ud83d there"}
    response = api.post("/mail/send", json.dumps(body), content_type="application/json", HTTP_X_API_KEY=key)
    assert response.status_code == 422
    assert response.json()["errors"][field] == ["Surrogate characters are not allowed: U+D83D."]
    assert OutboundMessage.objects.count() == 0


def test_a_template_send_by_api_key_still_finds_the_keys_creators_own_template(api, charlie, sender):
    from mailcore.sending.mail_templates import template_create

    template = template_create(account=charlie.account, created_by=charlie, name="mine", subject="S {{n}}",
                               body_html="<p>{{n}}</p>")  # not shared: visible to charlie only
    response = send(api, new_key(charlie, scopes=["send"]), subject=None, body_text=None, template_id=template.pk,
                    variables={"n": "1"})
    assert response.status_code == 200, response.json()
    assert OutboundMessage.objects.get().payload["subject"] == "S 1"
