"""A mailbox owner's webmail session: its own realm, never a portal login (a cookie of its own)."""
from django.db import models


class WebmailSession(models.Model):
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="webmail_sessions")
    token_prefix = models.CharField(max_length=32, unique=True)
    token_digest = models.CharField(max_length=64)
    remember = models.BooleanField(default=False, help_text="Kept for 30 days instead of the browser session.")
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    credential_stamp = models.CharField(
        max_length=64, blank=True,
        help_text="A keyed digest of the mailbox password hash it was opened with; a new password ends it.")

    class Meta:
        db_table = "mailcore_webmailsession"
        indexes = [models.Index(fields=["expires_at"])]
