"""Provider events already applied: the unique (provider, event_id) row is written in the same
transaction as the event's effect, so a replayed event changes nothing."""
from django.db import models


class ProviderEventRecord(models.Model):
    provider = models.CharField(max_length=16)
    event_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=40)
    reference = models.CharField(max_length=128, blank=True, help_text="The purchase or subscription it concerns.")
    payload = models.JSONField(default=dict)
    applied_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-applied_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["provider", "event_id"], name="provider_event_once")]

    def __str__(self) -> str:
        return f"{self.provider} {self.kind} {self.event_id}"
