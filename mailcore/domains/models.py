from django.db import models

from mailcore.accounts.models import Account


class Domain(models.Model):
    """A mail domain an account has claimed; a name can be claimed by one account only."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        FAILED = "failed", "Failed"
        VERIFIED = "verified", "Verified"

    class MtaStsMode(models.TextChoices):
        """RFC 8461's policy modes: senders report (testing), refuse unverified TLS (enforce), or forget (none)."""

        TESTING = "testing", "Testing"
        ENFORCE = "enforce", "Enforce"
        NONE = "none", "None"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="domains")
    client = models.ForeignKey("mailcore.PartnerClient", on_delete=models.PROTECT, related_name="domains", null=True, blank=True)
    name = models.CharField(max_length=253, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    verification_token = models.CharField(max_length=64)
    verified_at = models.DateTimeField(null=True, blank=True)
    mailserver_added = models.BooleanField(default=True, help_text="Postfix and Dovecot read our tables.")
    dns_check = models.JSONField(null=True, blank=True, help_text="The last check, record by record.")
    check_attempts = models.PositiveIntegerField(default=0, help_text="Failed checks since the last success.")
    next_check_at = models.DateTimeField(null=True, blank=True, help_text="Background re-check of pending domains.")
    failure_reported_at = models.DateTimeField(null=True, blank=True)
    mta_sts_mode = models.CharField(max_length=8, choices=MtaStsMode.choices, default=MtaStsMode.TESTING,
                                    help_text="The mode of the MTA-STS policy served at mta-sts.<name>.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_verified(self) -> bool:
        return self.status == self.Status.VERIFIED


class DkimKey(models.Model):
    """A domain name's DKIM key, generated the first time the name is added and kept after, so a
    domain that is deleted and added again keeps the record its owner already published."""

    domain_name = models.CharField(max_length=253, unique=True)
    selector = models.CharField(max_length=63, default="dkim")
    private_key_pem = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
