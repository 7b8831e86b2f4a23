"""Every outgoing message as a durable row: what to send, where it stands, what became of it."""
import uuid

from django.db import models

from mailcore.accounts.models import Account
from mailcore.mailboxes.models import Mailbox


class OutboundMessage(models.Model):
    """One POST /mail/send. The row is the source of truth: a worker crash or restart loses nothing."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", "Scheduled"  # waits for due_at (scheduled_at or the undo window)
        QUEUED = "queued", "Queued"  # due; a worker will pick it up
        SENDING = "sending", "Sending"  # claimed by a worker
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        HELD = "held", "Held for review"  # scored as likely spam before leaving: its account releases or rejects it

    message_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="outbound_messages")
    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="outbound_messages")
    status = models.CharField(max_length=16, choices=Status.choices)
    sandbox = models.BooleanField(default=False)
    track_opens = models.BooleanField(default=False)
    # What to send, as validated: recipients, subject, bodies, attachments (base64), reply_to.
    payload = models.JSONField()
    scheduled_at = models.DateTimeField(null=True, blank=True, help_text="The time the caller asked for.")
    unsend_window = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Seconds held for undo.")
    due_at = models.DateTimeField(db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    rfc_message_id = models.CharField(max_length=255, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True, help_text="When it was sent, failed or cancelled.")

    @property
    def is_held(self) -> bool:
        """Accepted as `scheduled` (scheduled_at or unsend_window): its scheduled_id was given out."""
        return self.scheduled_at is not None or self.unsend_window is not None

    class Meta:
        ordering = ["due_at", "id"]
        # (status, due_at): the dispatcher; created_at: the metrics' recent outcomes
        indexes = [models.Index(fields=["status", "due_at"]), models.Index(fields=["created_at"])]
