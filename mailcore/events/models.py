"""Events and the webhook subscriptions they fan out to: the transactional outbox lives here, so
raising an event writes its delivery rows in the same transaction without reaching up to webhooks."""
from django.db import models

from mailcore.accounts.models import Account


class Event(models.Model):
    """Something that happened to an account, recorded in the transaction that caused it."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="events")
    name = models.CharField(max_length=64)
    data = models.JSONField(default=dict)
    sandbox = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["account", "name", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.name} #{self.pk}"


class WebhookEndpoint(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2048)
    events = models.JSONField(default=list)
    allowed_ips = models.JSONField(null=True, blank=True)
    is_active = models.BooleanField(default=True)
    secret_encrypted = models.TextField(help_text="The signing secret, encrypted with FIELD_ENCRYPTION_KEY.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # waiting for its (next) attempt
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"  # refused before sending (unsafe address, endpoint gone): no retries
        DEAD = "dead", "Dead"  # five attempts failed

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True, help_text="The first bytes of the endpoint's answer.")
    last_error = models.TextField(blank=True)
    replayed_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # (status, next_attempt_at): the deliverer; created_at: the metrics' recent outcomes
        indexes = [models.Index(fields=["status", "next_attempt_at"]), models.Index(fields=["created_at"])]
