"""The local provider's events as rows: posted to the webhook intake right after the commit that
recorded them, and by billing's `deliver-local-events` job (through the sweep) when that did not
happen; each is applied once however often it is delivered, and a failed delivery changes nothing
and is tried again later."""
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from billing.models import LocalEvent, ProviderEventRecord, Purchase
from billing.providers.local import LocalProvider
from billing.services.partners import addon_purchase_start
from mailcore.partners.models import HostingPartner
from mailcore.partners.services import hosting_partner_enable
from mailcore.sweep import job_named, job_run

RETURN_URL = "https://portal.example.test/billing/return"


@pytest.fixture
def purchase(charlie) -> Purchase:
    """charlie's partner account buys one domain slot at the local provider (nothing paid yet)."""
    partner = hosting_partner_enable(account=charlie.account, status=HostingPartner.Status.ACTIVE)
    return addon_purchase_start(partner=partner, addon_type="domain_slot", quantity=1, return_url=RETURN_URL)


def sweep() -> int | None:
    """The job as the worker runs it (its lock cleared: each call here is a later run)."""
    cache.delete("sweep-lock:deliver-local-events")
    return job_run(job_named("deliver-local-events"))


def domain_limit(purchase: Purchase) -> int:
    return HostingPartner.objects.get(account=purchase.account).domain_limit


def test_an_event_whose_hand_over_never_ran_is_applied_by_the_job_once(purchase):
    before = domain_limit(purchase)
    LocalProvider().checkout_complete(purchase.provider_ref, paid=True)  # this transaction's commit never comes
    event = LocalEvent.objects.get()
    assert (event.kind, event.delivered_at) == ("checkout.paid", None)
    assert domain_limit(purchase) == before

    assert sweep() == 1
    assert sweep() == 0

    event.refresh_from_db()
    assert event.delivered_at is not None and event.next_attempt_at is None and event.attempts == 0
    assert domain_limit(purchase) == before + 1
    assert list(ProviderEventRecord.objects.values_list("provider", "event_id")) == [("local", event.event_id)]


def test_the_hand_over_and_the_job_racing_for_an_event_apply_it_once(purchase, django_capture_on_commit_callbacks):
    before = domain_limit(purchase)
    with django_capture_on_commit_callbacks() as hand_overs:
        LocalProvider().checkout_complete(purchase.provider_ref, paid=True)
    assert sweep() == 1
    for hand_over in hand_overs * 2:
        hand_over()
    assert sweep() == 0
    assert domain_limit(purchase) == before + 1
    assert ProviderEventRecord.objects.count() == 1
    purchase.refresh_from_db()
    assert purchase.status == Purchase.Status.PAID


def test_a_failed_delivery_changes_nothing_and_is_tried_again_later(purchase):
    before = domain_limit(purchase)
    LocalProvider().checkout_complete(purchase.provider_ref, paid=True)
    event = LocalEvent.objects.get()
    body = event.body
    LocalEvent.objects.update(body=body[:-1])  # the intake cannot read it
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        assert sweep() == 0
        event.refresh_from_db()
        assert (event.attempts, event.delivered_at) == (1, None)
        assert event.next_attempt_at == timezone.now() + timedelta(minutes=1)
        assert event.last_error.startswith("SignatureInvalid: unreadable event")
        assert domain_limit(purchase) == before and not ProviderEventRecord.objects.exists()
        assert sweep() == 0  # not due yet: not tried
        event.refresh_from_db()
        assert event.attempts == 1

        LocalEvent.objects.update(body=body)
        traveller.shift(timedelta(minutes=1))
        assert sweep() == 1
    assert domain_limit(purchase) == before + 1


def test_an_event_that_keeps_failing_is_tried_less_and_less_often_and_given_up_after_three_days(purchase):
    LocalProvider().checkout_complete(purchase.provider_ref, paid=True)
    LocalEvent.objects.update(body="{")
    waits = []
    with time_machine.travel(timezone.now(), tick=False) as traveller:
        while (event := LocalEvent.objects.get()).next_attempt_at is not None:
            traveller.move_to(event.next_attempt_at)
            assert sweep() == 0
            after = LocalEvent.objects.get()
            if after.next_attempt_at is not None:
                waits.append(after.next_attempt_at - timezone.now())
        last_try = timezone.now()
    assert waits[:7] == [timedelta(minutes=minutes) for minutes in (1, 2, 4, 8, 16, 32, 60)]
    assert set(waits[6:]) == {timedelta(hours=1)}
    event = LocalEvent.objects.get()
    assert event.delivered_at is None and event.attempts == len(waits) + 1
    assert timedelta(days=2, hours=23) < last_try - event.created_at < timedelta(days=3)
    assert not ProviderEventRecord.objects.exists()
