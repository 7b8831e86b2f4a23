"""The campaign engine with the clock moved, through the sweep's own job: each enrolled contact gets
each step once, in order, at enrolment plus the steps' delays, never early; pause holds everything
due and resume carries on without duplicates; steps added or deleted on a running campaign; a
suppression (unsubscribe, bounce) or a stopped enrolment ends later steps; A/B variants are
deterministic per contact, recorded, sent with the matching subject and split as set; a full
hourly quota or the partner's campaign budget makes mail wait instead of failing."""
from collections import defaultdict
from datetime import timedelta

import pytest
import time_machine
from django.core.cache import cache
from django.utils import timezone

from campaigns.engine import FIBONACCI, campaigns_run_due, deliver, variant_for
from campaigns.models import Campaign, CampaignStep, Enrollment, StepDelivery, Suppression
from campaigns.services import (
    CampaignInvalid, CampaignState, campaign_create, campaign_pause, campaign_resume, campaign_send, step_add,
    step_delete, step_update,
)
from contacts.services import address_book_for, contact_create
from mailcore.outbound.models import OutboundMessage
from mailcore.sweep import JOBS, job_run
from testkit.factories import make_mailbox

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(alice):
    mailbox = make_mailbox(alice.account, "news@example.test")
    book = address_book_for(account=alice.account)
    for n in range(20):
        contact_create(book=book, name=f"Person {n}", email=f"p{n}@people.test", groups=["List"] if n < 15 else [])
    return mailbox, book


def drip(mailbox, book, **options):
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="Welcome",
                               subject="Hello {{first_name}}", body_html="<p>Hi {{name}}</p>",
                               postal_address="1 Market Street, Springfield", **options)
    step_add(campaign=campaign, delay_hours=24, subject="Day two", body_html="<p>Two</p>")
    step_add(campaign=campaign, delay_hours=48, subject="Day four", body_html="<p>Four</p>")
    return campaign


STEPS_JOB = next(job for job in JOBS if job.name == "campaign-steps")
HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)


def sweep() -> int:
    """The sweep's own campaign job, run until nothing more is due now (its lock cleared each time,
    as if its interval had passed); how many deliveries it sent."""
    total = 0
    while True:
        cache.delete(f"sweep-lock:{STEPS_JOB.name}")
        sent = job_run(STEPS_JOB)
        assert sent is not None, "the campaign job failed"
        if not sent:
            return total
        total += sent


def letters() -> dict[str, list[tuple[str, object]]]:
    """What each address was sent, in order: (subject, when the message was created)."""
    by_address = defaultdict(list)
    for message in OutboundMessage.objects.order_by("created_at", "pk"):
        assert len(message.payload["to"]) == 1
        by_address[message.payload["to"][0]].append((message.payload["subject"], message.created_at))
    return dict(by_address)


@pytest.fixture
def crowd(alice):
    """200 contacts in the group Members, and one outside it."""
    mailbox = make_mailbox(alice.account, "news@example.test")
    book = address_book_for(account=alice.account)
    for n in range(200):
        contact_create(book=book, name=f"Member{n} Smith", email=f"m{n:03}@crowd.test", groups=["Members"])
    contact_create(book=book, name="Outsider", email="out@crowd.test")
    return mailbox, book, book.groups.get(name="Members")


def sent_subjects(to: str) -> list[str]:
    return [m.payload["subject"] for m in OutboundMessage.objects.filter(payload__to=[to]).order_by("created_at", "pk")]


def test_a_three_step_drip_reaches_each_contact_once_per_step_in_order_at_the_right_time(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book, group=book.groups.get(name="List"))
    start = timezone.now()
    with time_machine.travel(start, tick=False) as clock:
        assert campaign_send(campaign=campaign) == 15
        assert campaigns_run_due() == 15
        assert campaigns_run_due() == 0
        clock.move_to(start + timedelta(hours=23, minutes=59))
        assert campaigns_run_due() == 0
        clock.move_to(start + timedelta(hours=24))
        assert campaigns_run_due() == 15
        clock.move_to(start + timedelta(hours=71))
        assert campaigns_run_due() == 0
        clock.move_to(start + timedelta(hours=72))
        assert campaigns_run_due() == 15
    assert sent_subjects("p3@people.test") == ["Hello Person", "Day two", "Day four"]
    assert sent_subjects("p17@people.test") == []
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETED
    assert StepDelivery.objects.filter(status=StepDelivery.Status.SENT).count() == 45


def test_pause_holds_due_steps_and_resume_sends_them(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    campaign_send(campaign=campaign)
    campaign_pause(campaign=campaign)
    assert campaigns_run_due() == 0
    with pytest.raises(CampaignState):
        campaign_pause(campaign=campaign)
    campaign_resume(campaign=campaign)
    assert campaigns_run_due() == 20


def test_suppressed_addresses_are_not_enrolled_and_a_later_suppression_stops_later_steps(setup, alice):
    mailbox, book = setup
    Suppression.objects.create(account=alice.account, email="p0@people.test", reason="unsubscribed")
    campaign = drip(mailbox, book)
    assert campaign_send(campaign=campaign) == 19
    campaigns_run_due()
    Suppression.objects.create(account=None, email="p1@people.test", reason="complaint")
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        campaigns_run_due()
    assert sent_subjects("p1@people.test") == ["Hello Person"]
    assert Enrollment.objects.get(email="p1@people.test").status == Enrollment.Status.STOPPED


def test_a_full_hourly_quota_makes_campaign_mail_wait_for_the_next_hour(setup, settings):
    mailbox, book = setup
    plan = mailbox.effective_plan
    plan.sends_per_hour = 5
    plan.save()
    campaign = drip(mailbox, book)
    campaign_send(campaign=campaign)
    assert campaigns_run_due() == 5
    waiting = StepDelivery.objects.filter(status=StepDelivery.Status.PENDING, step__position=1)
    assert waiting.count() == 15 and all(d.due_at > timezone.now() for d in waiting)
    assert not StepDelivery.objects.filter(status=StepDelivery.Status.FAILED).exists()


def test_a_segment_filter_is_checked_and_narrows_the_audience(setup):
    mailbox, book = setup
    with pytest.raises(CampaignInvalid):
        campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="x", subject="s", body_html="b",
                        segment_filter=[{"field": "password", "op": "equals", "value": "x"}])
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="x", subject="s",
                               body_html="b", postal_address="1 Market Street", segment_filter=[{"any": [
                                   {"field": "email", "op": "starts_with", "value": "p1"},
                                   {"field": "name", "op": "equals", "value": "Person 2"}]}])
    assert campaign_send(campaign=campaign) == 12  # p1, p10-p19, p2


def test_a_three_step_drip_over_a_group_of_200_goes_through_the_sweep_once_per_step_in_order_never_early(crowd):
    mailbox, book, members = crowd
    campaign = drip(mailbox, book, group=members)
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        assert campaign_send(campaign=campaign) == 200
        assert sweep() == 200
        for moment, expected in [(24 * HOUR - SECOND, 0), (24 * HOUR, 200), (72 * HOUR - SECOND, 0),
                                 (72 * HOUR, 200), (500 * HOUR, 0)]:
            clock.move_to(start + moment)
            assert sweep() == expected, moment
    got = letters()
    assert sorted(got) == [f"m{n:03}@crowd.test" for n in range(200)]  # the outsider got nothing
    for n in range(200):
        assert got[f"m{n:03}@crowd.test"] == [(f"Hello Member{n}", start), ("Day two", start + 24 * HOUR),
                                               ("Day four", start + 72 * HOUR)]
    assert StepDelivery.objects.filter(status=StepDelivery.Status.SENT).count() == 600
    assert not StepDelivery.objects.exclude(status=StepDelivery.Status.SENT).exists()
    assert set(Enrollment.objects.values_list("status", flat=True)) == {Enrollment.Status.COMPLETED}
    campaign.refresh_from_db()
    assert (campaign.status, campaign.finished_at) == (Campaign.Status.COMPLETED, start + 72 * HOUR)


def test_a_pause_in_the_middle_of_a_step_holds_the_rest_and_resume_sends_each_once_keeping_the_gap(crowd):
    mailbox, book, members = crowd
    campaign = drip(mailbox, book, group=members)
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        campaign_send(campaign=campaign)
        assert campaigns_run_due(limit=80) == 80
        campaign_pause(campaign=campaign)
        assert sweep() == 0
        clock.move_to(start + 2 * HOUR)
        assert sweep() == 0
        campaign_resume(campaign=campaign)
        assert sweep() == 120
        clock.move_to(start + 24 * HOUR)
        assert sweep() == 80  # those who had the first step on time get the second on time
        clock.move_to(start + 26 * HOUR - SECOND)
        assert sweep() == 0  # the others: not less than the step's 24 hours after their late first one
        clock.move_to(start + 26 * HOUR)
        assert sweep() == 120
    on_time = [("Hello Member", start), ("Day two", start + 24 * HOUR)]
    late = [("Hello Member", start + 2 * HOUR), ("Day two", start + 26 * HOUR)]
    kinds = [[(subject.rstrip("0123456789"), when) for subject, when in mail] for mail in letters().values()]
    assert len(kinds) == 200
    assert (kinds.count(on_time), kinds.count(late)) == (80, 120)


def test_a_step_added_to_a_running_or_finished_campaign_reaches_everyone_after_their_last_step(setup):
    mailbox, book = setup
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="News",
                               subject="Hello", body_html="<p>Hi</p>", postal_address="1 Market Street")
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        campaign_send(campaign=campaign)
        assert sweep() == 20
        campaign.refresh_from_db()
        assert campaign.status == Campaign.Status.COMPLETED
        clock.move_to(start + HOUR)
        step_add(campaign=campaign, delay_hours=24, subject="Added when finished", body_html="<p>2</p>")
        campaign.refresh_from_db()
        assert campaign.status == Campaign.Status.SENDING
        clock.move_to(start + 2 * HOUR)
        step_add(campaign=campaign, delay_hours=2, subject="Added while waiting", body_html="<p>3</p>")
        for moment, expected in [(24 * HOUR - SECOND, 0), (24 * HOUR, 20), (26 * HOUR - SECOND, 0),
                                 (26 * HOUR, 20), (100 * HOUR, 0)]:
            clock.move_to(start + moment)
            assert sweep() == expected, moment
    expected = [("Hello", start), ("Added when finished", start + 24 * HOUR),
                ("Added while waiting", start + 26 * HOUR)]
    assert all(mail == expected for mail in letters().values()) and len(letters()) == 20
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETED


def test_a_step_deleted_before_it_went_out_is_skipped_and_the_next_follows_with_its_own_delay(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        campaign_send(campaign=campaign)
        assert sweep() == 20
        clock.move_to(start + HOUR)
        step_delete(step=campaign.steps.get(subject="Day two"))
        with pytest.raises(CampaignState):  # the first step went out: it stays
            step_delete(step=campaign.steps.get(position=1))
        for moment, expected in [(24 * HOUR, 0), (48 * HOUR - SECOND, 0), (48 * HOUR, 20), (200 * HOUR, 0)]:
            clock.move_to(start + moment)
            assert sweep() == expected, moment
    assert letters()["p7@people.test"] == [("Hello Person", start), ("Day four", start + 48 * HOUR)]
    assert all(len(mail) == 2 for mail in letters().values()) and len(letters()) == 20


def test_an_unsubscribe_a_hard_bounce_or_a_stopped_enrolment_ends_later_steps(setup, alice):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    start = timezone.now().replace(microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        campaign_send(campaign=campaign)
        assert sweep() == 20
        Suppression.objects.create(account=alice.account, email="p1@people.test", reason="unsubscribed",
                                   campaign=campaign)
        Suppression.objects.create(account=alice.account, email="p2@people.test", reason="hard_bounce",
                                   campaign=campaign)
        Enrollment.objects.filter(email="p3@people.test").update(status=Enrollment.Status.STOPPED,
                                                                 stop_reason="unsubscribed")
        clock.move_to(start + 24 * HOUR)
        assert sweep() == 17
        clock.move_to(start + 72 * HOUR)
        assert sweep() == 17
    for address in ("p1@people.test", "p2@people.test", "p3@people.test"):
        assert letters()[address] == [("Hello Person", start)]
        assert list(StepDelivery.objects.filter(enrollment__email=address).order_by("step__position").values_list(
            "status", flat=True)) == ["sent", "skipped"]
    assert letters()["p4@people.test"][1:] == [("Day two", start + 24 * HOUR), ("Day four", start + 72 * HOUR)]
    assert dict(Enrollment.objects.filter(status=Enrollment.Status.STOPPED).values_list("email", "stop_reason")) == {
        "p1@people.test": "suppressed", "p2@people.test": "suppressed", "p3@people.test": "unsubscribed"}
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.COMPLETED


def test_an_ab_split_over_1000_contacts_is_within_3_points_deterministic_recorded_and_sent_as_recorded(alice, settings):
    settings.CAMPAIGN_SENDS_PER_HOUR = 10_000
    mailbox = make_mailbox(alice.account, "news@example.test")
    plan = mailbox.effective_plan
    plan.sends_per_hour = plan.sends_per_day = 10_000
    plan.save()
    book = address_book_for(account=alice.account)
    for n in range(1000):
        contact_create(book=book, name=f"C{n}", email=f"c{n:04}@many.test")
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="AB", subject="Half A",
                               body_html="<p>1</p>", postal_address="1 Market Street")
    step_update(step=campaign.steps.get(), subject_b="Half B", ab_split_percent=50)
    step_add(campaign=campaign, subject="Fifth A", subject_b="Fifth B", ab_split_percent=20, body_html="<p>2</p>")
    campaign_send(campaign=campaign)
    assert sweep() == 2000
    subjects = {m.pk: m.payload["subject"] for m in OutboundMessage.objects.all()}
    for step, percent in [(campaign.steps.get(position=1), 50), (campaign.steps.get(position=2), 20)]:
        rows = list(step.deliveries.select_related("enrollment"))
        assert len(rows) == 1000
        share_a = sum(row.variant == "a" for row in rows) / 10
        assert abs(share_a - percent) <= 3, share_a
        for row in rows:  # recorded, the same when asked again, and the subject sent is the variant's
            assert row.variant == variant_for(step, row.enrollment.email, enrollment_id=row.enrollment_id)
            assert subjects[row.outbound_id] == (step.subject_b if row.variant == "b" else step.subject)
    assert sweep() == 0  # nothing is drawn twice


def test_the_ab_hash_splits_any_run_of_enrolments_as_set_and_a_preview_hash_is_stable():
    step = CampaignStep(pk=7, campaign_id=3, subject="A", subject_b="B", ab_split_percent=50)
    for percent in (50, 20, 1, 99):
        step.ab_split_percent = percent
        for first in (1, 123_457, 10**12):  # wherever the enrolment ids of a campaign start
            variants = [variant_for(step, "x@y.test", enrollment_id=first + n) for n in range(1000)]
            assert abs(variants.count("a") / 10 - percent) <= 1
            variants = [variant_for(step, "x@y.test", enrollment_id=first + n) for n in range(100)]
            assert abs(variants.count("a") - percent) <= 3
    assert variant_for(step, "Someone@Y.test") == variant_for(step, "someone@y.test")
    step.subject_b = ""
    assert {variant_for(step, "x@y.test", enrollment_id=n) for n in range(50)} == {"a"}
    assert FIBONACCI % 2 == 1


def test_the_partner_hourly_campaign_budget_makes_mail_wait_for_the_next_hour(setup, settings):
    mailbox, book = setup
    settings.CAMPAIGN_SENDS_PER_HOUR = 7
    campaign = drip(mailbox, book)
    start = timezone.now().replace(minute=10, second=0, microsecond=0)
    with time_machine.travel(start, tick=False) as clock:
        campaign_send(campaign=campaign)
        assert sweep() == 7
        waiting = StepDelivery.objects.filter(status=StepDelivery.Status.PENDING, step__position=1)
        assert waiting.count() == 13 and {d.due_at for d in waiting} == {start.replace(minute=0) + HOUR}
        clock.move_to(start.replace(minute=0) + HOUR)
        assert sweep() == 7
        clock.move_to(start.replace(minute=0) + 2 * HOUR)
        assert sweep() == 6
    assert not StepDelivery.objects.filter(status=StepDelivery.Status.FAILED).exists()
    assert all(len(mail) == 1 for mail in letters().values()) and len(letters()) == 20


def test_a_suspended_sending_mailbox_pauses_the_campaign_instead_of_failing_everyone(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    campaign_send(campaign=campaign)
    mailbox.is_active = False
    mailbox.save(update_fields=["is_active"])
    assert sweep() == 0
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.PAUSED
    assert StepDelivery.objects.filter(status=StepDelivery.Status.PENDING).count() == 20
    mailbox.is_active = True
    mailbox.save(update_fields=["is_active"])
    campaign_resume(campaign=campaign)
    assert sweep() == 20


def test_a_delivery_mail_send_refuses_fails_alone_and_the_rest_go_out(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    campaign_send(campaign=campaign)
    Enrollment.objects.filter(email="p5@people.test").update(email="not an address")
    assert sweep() == 19
    failed = StepDelivery.objects.get(status=StepDelivery.Status.FAILED)
    assert "'not an address' is not an email address" in failed.last_error
    assert failed.enrollment.status == Enrollment.Status.STOPPED


def test_a_delivery_already_sent_or_held_elsewhere_is_not_sent_again(setup):
    mailbox, book = setup
    campaign = drip(mailbox, book)
    campaign_send(campaign=campaign)
    first = StepDelivery.objects.order_by("pk").first()
    assert deliver(first.pk, {}) == "sent"
    assert deliver(first.pk, {}) == "taken"
    assert OutboundMessage.objects.count() == 1


def test_real_sends_fill_a_placeholders_fallback_only_where_the_contact_has_no_name(alice):
    mailbox = make_mailbox(alice.account, "news@example.test")
    book = address_book_for(account=alice.account)
    contact_create(book=book, name="Ann Baker", email="ann@people.test")
    nameless = contact_create(book=book, name="Nameless", email="nameless@people.test")
    type(nameless).objects.filter(pk=nameless.pk).update(name="")  # imported without a name
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="Launch",
                               subject="{{ first_name | there }}, pre-order",
                               body_html="<p>Hi {{name|friend}} {{x}}</p>",
                               postal_address="1 Market Street, Springfield")
    campaign_send(campaign=campaign)
    campaigns_run_due()
    assert sent_subjects("ann@people.test") == ["Ann, pre-order"]
    assert sent_subjects("nameless@people.test") == ["there, pre-order"]
    body = OutboundMessage.objects.get(payload__to=["nameless@people.test"]).payload["body_html"]
    assert "<p>Hi friend {{x}}</p>" in body  # an unknown placeholder is left as written
