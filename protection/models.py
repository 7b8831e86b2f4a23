"""What protection keeps: each client domain's thresholds, owners' and partners' sender lists, the
quarantine. Scores are rspamd's (GTUBE is 15, a clean message near 0)."""
import secrets

from django.db import models

from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Mailbox

JUNK_AT = 6.0
QUARANTINE_AT = 10.0
REFUSE_AT = 15.0


class DomainPolicy(models.Model):
    """A client domain's thresholds, set by its partner (no row: the defaults). A message at or over
    a threshold takes that action; refuse_at is the highest, junk_at the lowest."""

    domain = models.OneToOneField(Domain, on_delete=models.CASCADE, related_name="protection_policy")
    junk_at = models.FloatField(default=JUNK_AT)
    quarantine_at = models.FloatField(default=QUARANTINE_AT)
    refuse_at = models.FloatField(default=REFUSE_AT)
    greylist = models.BooleanField(default=True, help_text="Unknown senders with a doubtful score are asked to retry once.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Protection of {self.domain.name}"


class MailboxPolicy(models.Model):
    """An owner's own filtering: only ever stricter than the domain's (a lower junk threshold)."""

    mailbox = models.OneToOneField(Mailbox, on_delete=models.CASCADE, related_name="protection_policy")
    junk_at = models.FloatField(null=True, blank=True, help_text="Lower than the domain's to file more in Junk.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Protection of {self.mailbox.address}"


class SenderRule(models.Model):
    """An allowed or blocked sender (an address, or a domain with its subdomains) for one mailbox
    (the owner's) or for a client domain (the partner's): exactly one of mailbox and domain is set."""

    class Kind(models.TextChoices):
        ALLOW = "allow", "Allow"
        BLOCK = "block", "Block"

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, null=True, blank=True, related_name="sender_rules")
    domain = models.ForeignKey(Domain, on_delete=models.CASCADE, null=True, blank=True, related_name="sender_rules")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    sender = models.CharField(max_length=320, help_text="user@example.com, or example.com for the domain and its subdomains.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sender"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(mailbox__isnull=False, domain__isnull=True)
                           | models.Q(mailbox__isnull=True, domain__isnull=False)),
                name="sender_rule_one_scope"),
            models.UniqueConstraint(fields=["mailbox", "sender"], condition=models.Q(mailbox__isnull=False),
                                    name="sender_rule_unique_mailbox"),
            models.UniqueConstraint(fields=["domain", "sender"], condition=models.Q(domain__isnull=False),
                                    name="sender_rule_unique_domain"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.sender}"


def _public_id() -> str:
    return "q_" + secrets.token_urlsafe(12)


class Quarantined(models.Model):
    """A message held for one mailbox instead of delivered: kept (bounded in size and days) until
    its owner, partner or the operator releases or deletes it. Released means delivered once to the
    Inbox; the row stays as the record of that."""

    public_id = models.CharField(max_length=40, unique=True, default=_public_id)
    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="quarantined")
    envelope_from = models.CharField(max_length=320, blank=True)
    from_header = models.CharField(max_length=998, blank=True)
    subject = models.CharField(max_length=998, blank=True)
    message_id = models.CharField(max_length=998, blank=True)
    raw = models.BinaryField(help_text="The message as it would have been stored, our headers included.")
    size = models.PositiveIntegerField()
    score = models.FloatField()
    reasons = models.JSONField(default=list, help_text="Plain-words reasons, as the owner reads them.")
    symbols = models.JSONField(default=dict, help_text="rspamd's symbols and their scores.")
    virus = models.CharField(max_length=200, blank=True, help_text="The signature's name when a scanner found one.")
    created_at = models.DateTimeField(auto_now_add=True)
    notified_at = models.DateTimeField(null=True, blank=True, help_text="When a digest listed it.")
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=200, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["mailbox", "created_at"])]

    def __str__(self) -> str:
        return f"{self.subject or '(no subject)'} for {self.mailbox.address}"

    @property
    def is_waiting(self) -> bool:
        return self.released_at is None and self.deleted_at is None


class DigestRun(models.Model):
    """One run of the daily quarantine digest: recorded so the operator sees that it runs, what it
    sent and what failed (a digest that stops is seen in the console, never silent)."""

    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    digests_sent = models.PositiveIntegerField(default=0)
    messages_listed = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0, help_text="Mailboxes whose digest could not be delivered.")
    problem = models.TextField(blank=True, help_text="The last failure, in words.")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"Digest run at {self.started_at:%Y-%m-%d %H:%M}"
