from django.db import models

from mailcore.accounts.models import Account

# The label of a domain's own tracking host: track.<domain>, a CNAME to settings.TRACKING_HOST.
TRACKING_LABEL = "track"


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
    alias_of = models.ForeignKey("self", on_delete=models.PROTECT, related_name="alias_domains", null=True,
                                 blank=True, help_text="x@this domain reaches x@alias_of (same client, no chains).")
    catch_all = models.ForeignKey("mailcore.Mailbox", on_delete=models.SET_NULL, related_name="+", null=True,
                                  blank=True, help_text="The mailbox that gets mail to unknown local parts.")
    tracking_host_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="When track.<name> was last seen as a CNAME to TRACKING_HOST; "
        "tracked links use it only while set.")
    mta_sts_mode = models.CharField(max_length=8, choices=MtaStsMode.choices, default=MtaStsMode.TESTING,
                                    help_text="The mode of the MTA-STS policy served at mta-sts.<name>.")
    dkim_rotate_every_months = models.PositiveSmallIntegerField(
        default=0, help_text="Start a DKIM key rotation this many months after the last switch; 0: never.")
    dkim_ed25519 = models.BooleanField(default=False, help_text="Sign with an Ed25519 key beside RSA (RFC 8463).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_verified(self) -> bool:
        return self.status == self.Status.VERIFIED

    @property
    def tracking_host(self) -> str | None:
        """The domain's own tracking and click host, once its CNAME has been seen; else None."""
        return f"{TRACKING_LABEL}.{self.name}" if self.tracking_host_seen_at else None


class DkimKey(models.Model):
    """A DKIM key of a domain name, kept by name (not by Domain) so a domain that is deleted and added
    again keeps the records its owner already published. A name has one active key per algorithm (the
    one that signs) and, while a rotation runs, a pending one under the other selector (published in
    the wizard, signing only once DNS has it) or a retiring one (still published, no longer signing)."""

    class Algorithm(models.TextChoices):
        RSA = "rsa", "RSA 2048"
        ED25519 = "ed25519", "Ed25519"

    class State(models.TextChoices):
        PENDING = "pending", "Waiting to be seen in DNS"
        ACTIVE = "active", "Signing"
        RETIRING = "retiring", "Still published, no longer signing"
        RETIRED = "retired", "Retired"

    domain_name = models.CharField(max_length=253)
    selector = models.CharField(max_length=63, default="dkim")
    algorithm = models.CharField(max_length=8, choices=Algorithm.choices, default=Algorithm.RSA)
    state = models.CharField(max_length=8, choices=State.choices, default=State.ACTIVE)
    private_key_pem = models.TextField(help_text="Erased once the retired key is no longer listed.")
    created_at = models.DateTimeField(auto_now_add=True)
    next_check_at = models.DateTimeField(null=True, blank=True, help_text="A pending key's next DNS look-up.")
    activated_at = models.DateTimeField(null=True, blank=True, help_text="Signing since (a schedule counts from it).")
    retire_after = models.DateTimeField(null=True, blank=True, help_text="A retiring key stays published until then.")
    retired_at = models.DateTimeField(null=True, blank=True)
    shown_until = models.DateTimeField(null=True, blank=True,
                                       help_text="A retired key is listed as removable until then.")

    class Meta:
        constraints = [
            # one signing key and one rotation at a time per name and algorithm; a selector holds one key
            models.UniqueConstraint(fields=["domain_name", "algorithm"], condition=models.Q(state="active"),
                                    name="dkimkey_one_active"),
            models.UniqueConstraint(fields=["domain_name", "algorithm"], condition=models.Q(state="pending"),
                                    name="dkimkey_one_pending"),
            models.UniqueConstraint(fields=["domain_name", "selector"], condition=~models.Q(state="retired"),
                                    name="dkimkey_selector_in_use"),
        ]
        indexes = [models.Index(fields=["domain_name", "state"], name="dkimkey_name_state")]
