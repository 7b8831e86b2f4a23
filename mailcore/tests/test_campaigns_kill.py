"""Exactly once under crashes and concurrency: the real worker (`manage.py worker`, a separate
process on the test database) is killed with SIGKILL in the middle of a campaign's batch, twice,
then two workers finish the job at the same time; every contact gets the step exactly once and none
is skipped. Two engines in threads at once never send a delivery twice (on PostgreSQL through
FOR UPDATE SKIP LOCKED; SQLite runs write transactions one at a time, so there the test shows the
same guarantee by serialisation, not by row locks).

Run against PostgreSQL with
DATABASE_URL=postgres://postgres@127.0.0.1:5432/test_campaigns_kill (a database of its own)."""
import threading
from collections import Counter

import pytest
from django.conf import settings
from django.db import connections

from mailcore.campaigns.engine import campaigns_run_due
from mailcore.campaigns.models import Campaign, Enrollment, StepDelivery
from mailcore.campaigns.services import campaign_create, campaign_send
from mailcore.contacts.services import address_book_for, contact_create
from mailcore.outbound.models import OutboundMessage
from testkit.factories import UserFactory, make_mailbox
from testkit.worker_process import WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the worker process reads what the test committed

CONTACTS = 200


@pytest.fixture
def campaign(plans):
    """A sending campaign over 200 contacts whose first (only) step is due now."""
    user = UserFactory(account__plan_code="premium")
    mailbox = make_mailbox(user.account, "news@kill.test")
    plan = mailbox.effective_plan
    plan.sends_per_hour = plan.sends_per_day = 100_000
    plan.save()
    book = address_book_for(account=user.account)
    for n in range(CONTACTS):
        contact_create(book=book, name=f"Reader {n}", email=f"r{n:03}@readers.test")
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="Launch",
                               subject="We are live, {{first_name}}", body_html="<p>Hello {{name}}</p>",
                               postal_address="1 Market Street, Springfield")
    assert campaign_send(campaign=campaign) == CONTACTS
    return campaign


def sent() -> int:
    return StepDelivery.objects.filter(status=StepDelivery.Status.SENT).count()


def assert_each_contact_got_the_step_exactly_once(campaign) -> None:
    per_address = Counter(to for m in OutboundMessage.objects.all() for to in m.payload["to"])
    assert per_address == Counter({f"r{n:03}@readers.test": 1 for n in range(CONTACTS)})
    deliveries = StepDelivery.objects.filter(enrollment__campaign=campaign)
    assert list(deliveries.values_list("status", flat=True).distinct()) == [StepDelivery.Status.SENT]
    assert deliveries.count() == CONTACTS
    assert len(set(deliveries.values_list("outbound_id", flat=True))) == CONTACTS
    assert set(Enrollment.objects.values_list("status", flat=True)) == {Enrollment.Status.COMPLETED}


def test_a_worker_killed_mid_batch_twice_then_two_at_once_send_each_contact_the_step_exactly_once(
        campaign, relay, tmp_path):
    environment = {"SMTP_URL": settings.SMTP_URL, "CAMPAIGN_SENDS_PER_HOUR": "100000"}
    first, second = WorkerProcess(tmp_path / "one", **environment), WorkerProcess(tmp_path / "two", **environment)
    killed_at = []
    try:
        for further in (1, 25):  # kill it as soon as it has started, then later in the batch
            before = sent()
            first.start()
            wait_until(lambda: sent() >= before + further, what=f"{further} more sent", workers=[first])
            first.kill()
            killed_at.append(sent())
        assert 0 < killed_at[0] < killed_at[1] < CONTACTS, killed_at  # some but not all, both times
        first.start()
        second.start()
        wait_until(lambda: sent() == CONTACTS, timeout=120, what="every delivery sent", workers=[first, second])
        wait_until(lambda: Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.COMPLETED,
                   timeout=30, what="the campaign completed", workers=[first, second])
    finally:
        first.stop()
        second.stop()
    assert_each_contact_got_the_step_exactly_once(campaign)
    # Hand-over to the relay is the dispatcher's (at least once after its claim times out, 5 minutes):
    # within this test no address reached the relay twice.
    assert max(Counter(r for m in relay.messages for r in m.rcpt_tos).values(), default=1) == 1
    assert "Traceback" not in first.output() + second.output()


def test_two_engines_at_the_same_moment_never_send_a_delivery_twice(campaign):
    barrier = threading.Barrier(2)
    results, errors = [], []

    def engine():
        try:
            barrier.wait()
            results.append(campaigns_run_due())
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=engine) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sum(results) == CONTACTS
    assert_each_contact_got_the_step_exactly_once(campaign)
