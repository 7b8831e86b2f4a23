"""Provider events applied while the processes applying them die: Stripe's signed events are applied in
the web request (POST /billing/webhooks/stripe, no queue), so the process killed with SIGKILL in the
middle of a burst of them is the web server itself (gunicorn as production runs it), together with
the worker delivering the account events that those payments raise to customers' webhook endpoints
(`manage.py worker`; or Celery's worker with beat, the web server then handing it the job through Redis).

Both start again and Stripe does what it does: it retries every event that got no 2xx answer, and
may send any event more than once. In the end each payment is recorded once, each purchase grants
what it bought once (slots, domain slots, plan periods), each purchase event reaches the customer's
receiver exactly once counted by its delivery id, and nothing is lost.

Stripe is testkit/stripe_server.py on loopback; the partners' receiver testkit/https_receiver.py."""
import threading
from collections import Counter
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from billing.models import Payment, ProviderEventRecord, Purchase, Subscription
from billing.services.partners import addon_purchase_start, pool_purchase_start
from billing.services.plans import plan_change
from mailcore.events.models import Event, WebhookDelivery
from mailcore.partners.models import HostingPartner, MailboxSlot
from mailcore.partners.services import hosting_partner_enable
from mailcore.webhooks.services import endpoint_create
from testkit.factories import UserFactory
from testkit.https_receiver import https_receiver, verify
from testkit.web_process import WebProcess
from testkit.worker_process import CELERY_TEST_REDIS, CELERY_WORKER, EMBEDDED_WORKER, WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the server processes read what the test committed

WEBHOOK = "/billing/webhooks/stripe"
RETURN_URL = "https://portal.example.test/billing/return"
PARTNERS = 20  # each buys a slot pool and domain slots
SUBSCRIBERS = 10  # each buys Pro, then its first renewal is paid
CLIENTS = 4  # Stripe's deliveries in flight at once


@pytest.fixture
def partner_receiver(settings, tmp_path):
    """The partners' HTTPS webhook receiver (one path per partner)."""
    with https_receiver(tmp_path, keep_alive=True) as partner_receiver:
        settings.WEBHOOK_ALLOW_PRIVATE = True
        settings.WEBHOOK_CA_BUNDLE = partner_receiver.ca_path
        yield partner_receiver


@pytest.fixture
def bought(plans, fake_stripe, partner_receiver):
    """Partners' pools and domain slots and subscribers' Pro plans, each paid at Stripe (a renewal too):
    Stripe's events wait to be delivered. Each partner has a webhook endpoint for its purchases."""
    partners, secrets = [], {}
    for n in range(PARTNERS):
        partner = hosting_partner_enable(account=UserFactory().account, status=HostingPartner.Status.TRIAL)
        _, secrets[f"/p{n}"] = endpoint_create(account=partner.account, url=partner_receiver.url(f"/p{n}"),
                                               events=["partner_pool.purchased", "partner_addon.purchased"])
        pool = pool_purchase_start(partner=partner, plan_type="pro", quantity=1 + n % 3, return_url=RETURN_URL)
        addon = addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1 + n % 2,
                                     return_url=RETURN_URL)
        for purchase in (pool, addon):
            fake_stripe.checkout_pay(purchase.provider_ref)
        partners.append(partner)
    subscribers = []
    for _ in range(SUBSCRIBERS):
        account = UserFactory().account
        purchase = plan_change(account=account, plan_code="pro", return_url=RETURN_URL)
        fake_stripe.checkout_pay(purchase.provider_ref)
        fake_stripe.subscription_renew(fake_stripe.objects[purchase.provider_ref]["subscription"])
        subscribers.append(account)
    return partners, subscribers, secrets


class Stripe:
    """Stripe's side of the webhook: signs each event as it sends it, CLIENTS at once; keeps each
    event's last answer (a status code, or the error when none came)."""

    def __init__(self, fake_stripe, url: str):
        self.fake_stripe, self.url = fake_stripe, url
        self.answers: dict[str, int | str] = {}
        self.lock = threading.Lock()

    def acknowledged(self) -> int:
        return sum(1 for answer in self.answers.values() if answer == 200)

    def deliver(self, events: list[dict]) -> list[threading.Thread]:
        waiting = list(reversed(events))

        def client() -> None:
            with httpx.Client(timeout=30) as http:
                while True:
                    with self.lock:
                        if not waiting:
                            return
                        event = waiting.pop()
                    body, headers = self.fake_stripe.signed(event)
                    try:
                        answer = http.post(self.url, content=body, headers={
                            **headers, "Content-Type": "application/json"}).status_code
                    except httpx.HTTPError as error:
                        answer = error.__class__.__name__
                    self.answers[event["id"]] = answer

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        return threads

    def deliver_all(self, events: list[dict]) -> None:
        for thread in self.deliver(events):
            thread.join()


@pytest.mark.parametrize("command", [EMBEDDED_WORKER, CELERY_WORKER], ids=["embedded", "celery"])
def test_servers_killed_mid_burst_of_provider_events_apply_each_payment_once_and_lose_none(
        bought, fake_stripe, partner_receiver, settings, tmp_path, command):
    partners, subscribers, secrets = bought
    events = list(fake_stripe.events)
    environment = {"PAYMENT_PROVIDER": "usd=stripe,ngn=local", "STRIPE_API_KEY": settings.STRIPE_API_KEY,
                   "STRIPE_WEBHOOK_SECRET": settings.STRIPE_WEBHOOK_SECRET,
                   "STRIPE_API_BASE": settings.STRIPE_API_BASE, "WEBHOOK_ALLOW_PRIVATE": "1",
                   "WEBHOOK_CA_BUNDLE": partner_receiver.ca_path, "WORKER_PROCESSES": "1"}
    if command is CELERY_WORKER:
        environment["REDIS_URL"] = CELERY_TEST_REDIS  # the web server hands the webhook job to Celery
    web = WebProcess(tmp_path / "web", **environment)
    worker = WorkerProcess(tmp_path / "worker", command, **environment)
    stripe = Stripe(fake_stripe, web.url(WEBHOOK))
    try:
        web.start(wait=False)
        worker.start()  # after the web server: a Celery worker empties its Redis database when it first starts
        web.wait_answering()
        burst = stripe.deliver(events)
        wait_until(lambda: stripe.acknowledged() >= len(events) // 3, what="a third applied", workers=[web, worker])
        web.kill()
        worker.kill()
        for thread in burst:
            thread.join()
        unanswered = [event for event in events if stripe.answers[event["id"]] != 200]
        assert 0 < len(unanswered) < len(events)  # killed mid-burst
        # What got an answer was applied; the rest lost its connection (no 5xx, no 4xx).
        assert {answer for answer in stripe.answers.values() if not isinstance(answer, str)} == {200}
        # The dead worker's claims on deliveries run out (CLAIM_SECONDS) before another takes them.
        WebhookDelivery.objects.filter(status="pending").update(claimed_until=timezone.now() - timedelta(seconds=1))

        web.start(wait=False)
        worker.start()
        web.wait_answering()
        stripe.deliver_all(unanswered)  # Stripe retries what got no 2xx
        assert {stripe.answers[event["id"]] for event in unanswered} == {200}
        stripe.deliver_all(events[::3])  # and may send any event again
        assert set(stripe.answers.values()) == {200}
        wait_until(lambda: not WebhookDelivery.objects.exclude(status="delivered").exists(),
                   what="every purchase event delivered", workers=[web, worker])
    finally:
        web.stop()
        worker.stop()

    assert sorted(ProviderEventRecord.objects.values_list("event_id", flat=True)) == sorted(
        event["id"] for event in events)
    for n, partner in enumerate(partners):
        partner.refresh_from_db()
        assert MailboxSlot.objects.filter(partner=partner).count() == 1 + n % 3
        assert (partner.domain_limit, partner.status) == (HostingPartner.FREE_DOMAIN_SLOTS + 1 + n % 2, "active")
    for account in subscribers:
        account.refresh_from_db()
        invoices = [invoice["id"] for invoice in fake_stripe.of("invoice")
                    if invoice["customer"] == fake_stripe.objects[Purchase.objects.get(
                        account=account).provider_ref]["customer"]]
        assert (account.plan.code, len(invoices)) == ("pro", 2)
        payments = Payment.objects.filter(account=account).values_list("provider_ref", flat=True)
        assert sorted(payments) == sorted(invoices)  # the first payment and the renewal, each once
        assert list(Subscription.objects.filter(account=account).values_list("status", flat=True)) == ["active"]
    purchases = Purchase.objects.filter(account__in=[partner.account for partner in partners])
    assert set(purchases.values_list("status", flat=True)) == {"paid"}
    assert Counter(Payment.objects.filter(purchase__in=purchases).values_list("purchase_id", flat=True)) == Counter(
        {pk: 1 for pk in purchases.values_list("pk", flat=True)})
    raised = Counter(event.data["reference"] for event in Event.objects.filter(
        name__in=["partner_pool.purchased", "partner_addon.purchased"]))
    assert raised == Counter({reference: 1 for reference in purchases.values_list("reference", flat=True)})

    assert all(verify(secrets[hit.path], hit.signature, hit.body) for hit in partner_receiver.hits)
    processed = {}
    for hit in partner_receiver.hits:  # a receiver that drops a delivery id it has seen
        processed.setdefault(hit.delivery, hit)
    assert set(processed) == {str(pk) for pk in WebhookDelivery.objects.values_list("pk", flat=True)}
    assert Counter(hit.envelope["data"]["reference"] for hit in processed.values()) == raised
    assert "Traceback" not in web.output() + worker.output()
