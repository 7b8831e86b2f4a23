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
