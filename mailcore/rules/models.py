"""A mailbox owner's filters and vacation reply. The rows are the truth: mailcore.rules.sieve renders
them into one Sieve script (SieveScript) that Dovecot's Pigeonhole reads through its SQL dict (the
`dovecot_sieve_scripts` view) and runs at delivery; the embedded store applies the same rows itself
(mailcore.rules.delivery), remembering whom its vacation reply answered (VacationAnswer)."""
from django.db import models


class MailFilter(models.Model):
    """One rule: when a header matches, do one thing; rules run in `position` order."""

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
    folder = models.CharField(max_length=255, blank=True, help_text="Move: the folder's IMAP name.")
    label = models.ForeignKey("mailcore.Label", on_delete=models.CASCADE, null=True, blank=True,
                              related_name="mail_filters", help_text="Add label: the label (its IMAP keyword).")
    stop = models.BooleanField(default=True, help_text="Stop at this filter when it matches.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "id"]


class VacationReply(models.Model):
    mailbox = models.OneToOneField("mailcore.Mailbox", on_delete=models.CASCADE, related_name="vacation_reply")
    enabled = models.BooleanField(default=False)
    subject = models.CharField(max_length=200, blank=True, help_text="Empty: \"Auto: \" and the message's subject.")
    body = models.TextField(blank=True)
    starts_on = models.DateField(null=True, blank=True, help_text="First day it answers (UTC); empty: now.")
    ends_on = models.DateField(null=True, blank=True, help_text="Last day it answers (UTC); empty: until turned off.")
    days = models.PositiveSmallIntegerField(default=7, help_text="Answer each sender at most once in this many days.")
    updated_at = models.DateTimeField(auto_now=True)


class SieveScript(models.Model):
    """The script published for a mailbox, as Dovecot reads it. `data_id` changes with the text, which
    tells Pigeonhole to recompile; no row means no script (plain delivery to the Inbox)."""

    NAME = "mailwell"

    mailbox = models.OneToOneField("mailcore.Mailbox", on_delete=models.CASCADE, related_name="sieve_script")
    data_id = models.CharField(max_length=64)
    script = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)


class VacationAnswer(models.Model):
    """Whom the embedded store's vacation reply answered and when (Pigeonhole keeps its own record in
    the mail home). `handle` is a digest of the reply's text: a changed reply answers everyone again."""

    mailbox = models.ForeignKey("mailcore.Mailbox", on_delete=models.CASCADE, related_name="vacation_answers")
    sender = models.CharField(max_length=320, help_text="Lowercase envelope sender.")
    handle = models.CharField(max_length=64)
    answered_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["mailbox", "sender", "handle"], name="vacation_answer_once")]
