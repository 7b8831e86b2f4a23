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


class SendFailure(models.Model):
    """A send that ended with recipients refused or given up on, to be returned to its owner: the
    message kept in Drafts (when nothing was delivered and it was written here), a bounce in the
    Inbox, and a notice in the webmail until dismissed. Written in the same transaction as the
    message's final state; a job does the store writes, each marked done as soon as it is done."""

    message = models.OneToOneField("mailcore.OutboundMessage", on_delete=models.CASCADE, related_name="failure")
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="send_failures")
    recipients = models.JSONField(help_text='[{"recipient": ..., "reply": ...}] of those not reached.')
    delivered_to_none = models.BooleanField(default=True, help_text="No recipient accepted it.")
    draft_uid = models.PositiveBigIntegerField(null=True, blank=True, help_text="Its copy in Drafts, once kept.")
    bounced_at = models.DateTimeField(null=True, blank=True, help_text="When the bounce reached the Inbox.")
    returned_at = models.DateTimeField(null=True, blank=True, help_text="When every store write was done.")
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    dismissed_at = models.DateTimeField(null=True, blank=True, help_text="The owner closed the notice or resent it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["returned_at", "created_at"]), models.Index(fields=["mailbox", "dismissed_at"])]
