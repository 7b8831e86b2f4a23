"""Tables of the embedded mail store (used when MAIL_STORE=embedded, i.e. no Dovecot)."""
from django.db import models

from mailcore.mailboxes.models import Mailbox


class StoredFolder(models.Model):
    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="stored_folders")
    name = models.CharField(max_length=255)
    special_use = models.CharField(max_length=16, null=True, blank=True)
    uid_next = models.PositiveBigIntegerField(default=1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "name"], name="stored_folder_unique_name")]


class StoredMessage(models.Model):
    """One message in a folder; the columns beside `raw` are what listing and search read."""

    folder = models.ForeignKey(StoredFolder, on_delete=models.CASCADE, related_name="messages")
    uid = models.PositiveBigIntegerField()
    raw = models.BinaryField()
    size = models.PositiveIntegerField()
    internal_date = models.DateTimeField()
    seen = models.BooleanField(default=False)
    flagged = models.BooleanField(default=False)
    keywords = models.TextField(default=" ", help_text="Space-delimited with a space at each end.")
    subject = models.TextField(blank=True)
    from_header = models.TextField(blank=True)
    date = models.DateTimeField(null=True, blank=True)
    has_attachments = models.BooleanField(default=False)
    search_text = models.TextField(blank=True, help_text="Casefolded subject, addresses and body text.")
    to_header = models.TextField(blank=True)
    message_id = models.CharField(max_length=998, blank=True, db_index=True)
    thread_refs = models.TextField(default=" ", help_text="In-Reply-To and References ids, space-delimited with a space at each end.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["folder", "uid"], name="stored_message_unique_uid")]
        indexes = [models.Index(fields=["folder", "-uid"])]
