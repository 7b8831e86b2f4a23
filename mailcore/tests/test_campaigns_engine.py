"""The campaign engine with the clock moved: each enrolled contact gets each step once, in order, at
enrolment plus the steps' delays; pause holds everything due and resume carries on; suppressed
addresses and stopped enrolments are skipped; A/B variants are deterministic per contact and split
as set; a full hourly quota makes mail wait instead of failing."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from mailcore.campaigns.engine import campaigns_run_due, variant_for
from mailcore.campaigns.models import Campaign, Enrollment, StepDelivery, Suppression
from mailcore.campaigns.services import (
    CampaignInvalid, CampaignState, campaign_create, campaign_pause, campaign_resume, campaign_send, step_add,
)
from mailcore.contacts.services import address_book_for, contact_create
from mailcore.outbound.models import OutboundMessage
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


def test_ab_variants_are_stable_per_contact_and_split_as_set(setup):
    mailbox, book = setup
    campaign = campaign_create(mailbox=mailbox, book=book, from_email=mailbox.address, name="AB", subject="A",
                               body_html="x")
    step = campaign.steps.get()
    step.subject_b, step.ab_split_percent = "B", 30
    step.save()
    variants = [variant_for(step, f"user{n}@example.test") for n in range(1000)]
    assert variants == [variant_for(step, f"user{n}@example.test") for n in range(1000)]
    assert abs(variants.count("a") / 10 - 30) <= 3


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
