from django.db import models

from mailcore.mailboxes.models import Mailbox


class MailboxDailyUsage(models.Model):
    """What a mailbox used on one UTC day: sends (sandbox excluded) and AI tool requests."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="daily_usage")
    date = models.DateField()
    sends = models.PositiveIntegerField(default=0)
    ai_requests = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "date"], name="mailbox_usage_one_row_a_day")]


class MailboxHourlySends(models.Model):
    """Sends in one UTC hour, for the plan's hourly sub-limit."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="hourly_sends")
    hour = models.DateTimeField()
    sends = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "hour"], name="mailbox_sends_one_row_an_hour")]
