"""The retention job: held messages go after QUARANTINE_DAYS, and a mailbox keeps QUARANTINE_MAX_MB."""
from datetime import timedelta

import pytest
from django.utils import timezone

from mailcore.sweep import JOBS, job_named, job_run
from protection.models import Quarantined
from protection.quarantine import quarantine_keep
from testkit.factories import make_message

pytestmark = pytest.mark.django_db


def keep(mailbox, subject, *, days_ago=0, pad=0):
    item = quarantine_keep(mailbox=mailbox, raw=make_message(subject, "x" * pad, to=mailbox.address),
                           envelope_from="a@spam.test", score=12, reasons=[], symbols={})
    Quarantined.objects.filter(pk=item.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return item


def test_it_is_a_declared_job_of_protection():
    assert "quarantine-retention" in [job.name for job in JOBS]


def test_messages_older_than_the_retention_are_removed(ann, settings):
    settings.QUARANTINE_DAYS = 30
    keep(ann, "old", days_ago=31)
    keep(ann, "recent", days_ago=29)

    assert job_run(job_named("quarantine-retention")) == 1

    assert list(Quarantined.objects.values_list("subject", flat=True)) == ["recent"]


def test_a_mailbox_over_its_size_keeps_its_newest_waiting_messages(ann, settings):
    settings.QUARANTINE_MAX_MB = 10
    for days_ago in (3, 2, 1):
        keep(ann, f"{days_ago} days", days_ago=days_ago, pad=400_000)
    settings.QUARANTINE_MAX_MB = 1  # lowered since: the next run makes room

    job_run(job_named("quarantine-retention"))

    assert list(Quarantined.objects.values_list("subject", flat=True)) == ["1 days", "2 days"]
