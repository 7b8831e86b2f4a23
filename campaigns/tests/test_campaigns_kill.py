"""Exactly once under crashes and concurrency: the real worker (`manage.py worker`, or Celery's worker
with beat, a separate process on the test database) is killed with SIGKILL in the middle of a
campaign's batch over a contact group, twice, the second time while another worker runs beside it;
every member of the group gets the step exactly once, none is skipped, and no contact outside the
group gets anything. Two engines in threads at once never send a delivery twice (on PostgreSQL
through FOR UPDATE SKIP LOCKED; SQLite runs write transactions one at a time, so there the test
shows the same guarantee by serialisation, not by row locks).

Run against PostgreSQL with
DATABASE_URL=postgres://postgres@127.0.0.1:5432/test_campaigns_kill (a database of its own), and
with REDIS_URL set for Celery's side as production runs it."""
import threading
from collections import Counter

import pytest
from django.conf import settings
from django.db import connections

from campaigns.engine import campaigns_run_due
from campaigns.models import Campaign, Enrollment, StepDelivery
from campaigns.services import campaign_create, campaign_send
from contacts.models import ContactGroup
from contacts.services import address_book_for, contact_create
from mailcore.outbound.models import OutboundMessage
from testkit.factories import UserFactory, make_mailbox
from testkit.worker_process import CELERY_WORKER, EMBEDDED_WORKER, WorkerProcess, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the worker process reads what the test committed

CONTACTS = 200  # in the campaign's group
OUTSIDE = 40  # in the same book, not in the group


@pytest.fixture
def campaign(plans):
    """A sending campaign over a group of 200 contacts (of 240 in the book) whose first (only) step is due now."""
    user = UserFactory(account__plan_code="premium")
    mailbox = make_mailbox(user.account, "news@kill.test")
    plan = mailbox.effective_plan
    plan.sends_per_hour = plan.sends_per_day = 100_000
    plan.save()
    book = address_book_for(account=user.account)
    for n in range(CONTACTS):
        contact_create(book=book, name=f"Reader {n}", email=f"r{n:03}@readers.test", groups=["Launch list"])
    for n in range(OUTSIDE):
        contact_create(book=book, name=f"Other {n}", email=f"o{n:03}@others.test", groups=["Press"])
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="Launch",
                               subject="We are live, {{first_name}}", body_html="<p>Hello {{name}}</p>",
                               postal_address="1 Market Street, Springfield",
                               group=ContactGroup.objects.get(book=book, name="Launch list"))
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


@pytest.mark.parametrize("command", [EMBEDDED_WORKER, CELERY_WORKER], ids=["embedded", "celery"])
def test_a_worker_killed_mid_batch_twice_the_second_time_beside_another_sends_each_group_member_the_step_once(
        campaign, relay, tmp_path, command):
    environment = {"SMTP_URL": settings.SMTP_URL, "CAMPAIGN_SENDS_PER_HOUR": "100000"}
    first = WorkerProcess(tmp_path / "one", command, **environment)
    second = WorkerProcess(tmp_path / "two", command, **environment)
    killed_at = []
    try:
        first.start()
        wait_until(lambda: sent() >= 1, what="the first sent", workers=[first])
        first.kill()  # as soon as it has started
        killed_at.append(sent())
        first.start()
        second.start()  # two at once from here on
        wait_until(lambda: sent() >= killed_at[0] + 25, what="25 more sent", workers=[first, second])
        first.kill()  # one of the two, later in the batch; the other carries on
        killed_at.append(sent())
        assert 0 < killed_at[0] < killed_at[1] < CONTACTS, killed_at  # some but not all, both times
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
