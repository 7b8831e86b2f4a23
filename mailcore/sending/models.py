"""Saved mail templates (every send itself is an OutboundMessage in mailcore.outbound)."""
from django.conf import settings
from django.db import models

from mailcore.accounts.models import Account


class MailTemplate(models.Model):
    """A saved message; private to its author unless shared with the whole account."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="mail_templates")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    name = models.CharField(max_length=200)
    subject = models.CharField(max_length=998, blank=True)
    body_html = models.TextField()
    is_shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
