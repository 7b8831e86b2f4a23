"""Senders whose remote images a mailbox owner chose to always show."""
from django.db import models


class RemoteImageSender(models.Model):
    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="remote_image_senders")
    sender = models.CharField(max_length=320, help_text="Lowercase address.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "mailcore_remoteimagesender"
        constraints = [models.UniqueConstraint(fields=["mailbox", "sender"], name="remote_image_sender_unique")]
