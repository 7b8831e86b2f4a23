from django.db import models

from mailcore.accounts.models import HostingPartner, LapseAction


class PartnerClient(models.Model):
    """A hosting partner's own customer; it owns domains and, through them, mailboxes."""

    partner = models.ForeignKey(HostingPartner, on_delete=models.CASCADE, related_name="clients")
    name = models.CharField(max_length=200)
    lapse_action_override = models.CharField(max_length=16, choices=LapseAction.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name
