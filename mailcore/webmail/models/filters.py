"""A mailbox owner's filters and vacation reply. The rows are the truth; they are rendered into one
Sieve script that Dovecot's Pigeonhole runs at delivery (and the embedded store applies the same rows)."""
from django.db import models


class MailFilter(models.Model):
    class Field(models.TextChoices):
        FROM = "from", "From"
        TO = "to", "To or Cc"
        SUBJECT = "subject", "Subject"

    class Match(models.TextChoices):
        CONTAINS = "contains", "contains"
        IS = "is", "is"

    class Action(models.TextChoices):
        MOVE = "move", "Move to folder"
        MARK_READ = "mark_read", "Mark as read"
        STAR = "star", "Star"
        LABEL = "label", "Add label"
        DISCARD = "discard", "Delete"

    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="mail_filters")
    position = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    field = models.CharField(max_length=16, choices=Field.choices)
    match = models.CharField(max_length=16, choices=Match.choices, default=Match.CONTAINS)
    value = models.CharField(max_length=200)
    action = models.CharField(max_length=16, choices=Action.choices)
    argument = models.CharField(max_length=255, blank=True, help_text="The folder to move to, or the label's keyword.")
    stop = models.BooleanField(default=True, help_text="Stop at this filter when it matches.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "id"]


class VacationReply(models.Model):
    mailbox = models.OneToOneField("mailcore.Mailbox", on_delete=models.CASCADE, related_name="vacation_reply")
    enabled = models.BooleanField(default=False)
    subject = models.CharField(max_length=200, blank=True)
    body = models.TextField(blank=True)
    starts_on = models.DateField(null=True, blank=True)
    ends_on = models.DateField(null=True, blank=True)
    days = models.PositiveSmallIntegerField(default=7, help_text="Answer each sender at most once in this many days.")
    updated_at = models.DateTimeField(auto_now=True)
