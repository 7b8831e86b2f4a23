"""The local provider's own state (it plays the provider's side in one process): hosted checkouts,
subscriptions, and a clock an operator can move forward like Stripe's test clocks."""
from django.db import models
from django.utils import timezone

from billing.models.prices import CURRENCY_CHOICES


class LocalCheckout(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"

    token = models.CharField(max_length=48, unique=True)
    reference = models.CharField(max_length=40, help_text="The buyer's purchase reference (metadata).")
    description = models.CharField(max_length=200)
    amount_minor = models.PositiveBigIntegerField()
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    recurring = models.BooleanField(default=False)
    payment_method = models.CharField(max_length=16, default="card")
    return_url = models.URLField(max_length=2000, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)


class LocalSubscription(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAST_DUE = "past_due", "Past due"
        CANCELED = "canceled", "Canceled"

    token = models.CharField(max_length=48, unique=True)
    checkout = models.OneToOneField(LocalCheckout, on_delete=models.CASCADE, related_name="subscription")
    amount_minor = models.PositiveBigIntegerField()
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    description = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    cancel_at_period_end = models.BooleanField(default=False)
    failed_attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    renewals = models.PositiveIntegerField(default=0)


class LocalClock(models.Model):
    """One row: how far the local provider's time runs ahead of the wall clock."""

    offset_seconds = models.BigIntegerField(default=0)


class LocalEvent(models.Model):
    """An event the local provider sent, kept as its servers keep theirs until our webhook intake
    has taken it: `delivered_at` is set in the same transaction that applies it, so an event is
    never lost (the row stays undelivered) and never applied twice."""

    event_id = models.CharField(max_length=40, unique=True)
    kind = models.CharField(max_length=40)
    body = models.TextField(help_text="The JSON posted to the intake, signed when it is posted.")
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now,
                                           help_text="Empty once delivered or given up.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Failed deliveries so far.")
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["next_attempt_at"], condition=models.Q(delivered_at__isnull=True),
                                name="local_event_pending")]

    def __str__(self) -> str:
        return f"{self.kind} {self.event_id}"
