from django.db import models

from mailcore.accounts.models import Account, Plan
from mailcore.domains.models import Domain


class Mailbox(models.Model):
    """A mailbox the account reads through the API.

    `managed` mailboxes live on our store (Dovecot, or the embedded store) and Dovecot reads them
    through the `dovecot_users` view; their password hash is a scheme Dovecot verifies itself.
    `connected` mailboxes live at another provider and are reached over IMAP with the owner's
    credentials, encrypted at rest; they exist only once the account proved it owns the address
    (a code mailed to it, or its domain verified by the account). They send through their
    provider's submission server, or through the platform relay (with quota) when the account has
    verified the address's domain. A managed address is unique on the platform; a connected one
    only within its account, so it never stands in the way of the address's real host.
    """

    class Kind(models.TextChoices):
        MANAGED = "managed", "Service-managed"
        CONNECTED = "connected", "Connected over IMAP"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="mailboxes")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.MANAGED)
    domain = models.ForeignKey(Domain, on_delete=models.PROTECT, related_name="mailboxes", null=True, blank=True)
    local_part = models.CharField(max_length=64)
    address = models.CharField(max_length=320, db_index=True)
    display_name = models.CharField(max_length=200, blank=True)
    signature_html = models.TextField(blank=True)
    password_hash = models.CharField(max_length=255, blank=True)
    plan = models.ForeignKey(
        Plan, on_delete=models.PROTECT, null=True, blank=True, help_text="Empty means the account's plan."
    )
    extra_storage_mb = models.PositiveIntegerField(default=0)
    is_active = models.BooleanField(default=True, help_text="Off locks the mailbox out of IMAP, webmail and sending.")
    # Connected mailboxes only: where and how to log in.
    imap_host = models.CharField(max_length=253, blank=True)
    imap_port = models.PositiveIntegerField(null=True, blank=True)
    imap_tls = models.BooleanField(default=True)
    imap_username = models.CharField(max_length=320, blank=True)
    imap_password_encrypted = models.TextField(blank=True)
    imap_session_verified_at = models.DateTimeField(
        null=True, blank=True, help_text="Last successful IMAP login: the agent tools' 'cached session'."
    )
    smtp_host = models.CharField(max_length=253, blank=True,
                                 help_text="Connected mailboxes: the provider's submission server (empty: none given).")
    smtp_port = models.PositiveIntegerField(null=True, blank=True)
    smtp_security = models.CharField(max_length=8, blank=True, help_text="starttls, tls (implicit) or none.")
    smtp_username = models.CharField(max_length=320, blank=True)
    smtp_password_encrypted = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["address"]
        verbose_name_plural = "mailboxes"
        constraints = [
            models.UniqueConstraint(fields=["address"], condition=models.Q(kind="managed"),
                                    name="mailbox_managed_address_unique"),
            models.UniqueConstraint(fields=["account", "address"], name="mailbox_address_unique_per_account"),
        ]

    def __str__(self) -> str:
        return self.address

    @property
    def effective_plan(self) -> Plan:
        return self.plan or self.account.plan

    @property
    def quota_mb(self) -> int:
        return self.effective_plan.storage_mb + self.extra_storage_mb

    @property
    def is_managed(self) -> bool:
        return self.kind == self.Kind.MANAGED


class ConnectionVerification(models.Model):
    """A connected mailbox waiting for the code mailed to its address: not a mailbox until
    confirmed, so nothing is read or sent in its name before the account proved the address is its."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="connection_verifications")
    address = models.CharField(max_length=320)
    settings_encrypted = models.TextField(help_text="The connection's servers and logins (JSON), encrypted.")
    code_hash = models.CharField(max_length=128)
    attempts = models.PositiveSmallIntegerField(default=0)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["account", "address"], name="connection_verification_once")]

    def __str__(self) -> str:
        return f"{self.address} (waiting for its code)"


class Alias(models.Model):
    """Another address on a hosted domain whose mail goes to a mailbox."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="aliases")
    address = models.CharField(max_length=320, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["address"]
        verbose_name_plural = "aliases"

    def __str__(self) -> str:
        return f"{self.address} -> {self.mailbox.address}"


class ForwardingRule(models.Model):
    """Forward a mailbox's mail elsewhere, only while enabled and confirmed by the target."""

    mailbox = models.ForeignKey(Mailbox, on_delete=models.CASCADE, related_name="forwarding_rules")
    forward_to = models.EmailField(max_length=320)
    keep_copy = models.BooleanField(default=True)
    enabled = models.BooleanField(default=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["mailbox", "forward_to"], name="forward_once_per_target")]

    @property
    def is_live(self) -> bool:
        return self.enabled and self.confirmed_at is not None


class Label(models.Model):
    """An account's label; on messages it is the IMAP keyword `$label<id>`."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="labels")
    mailbox = models.ForeignKey("Mailbox", on_delete=models.CASCADE, null=True, blank=True, related_name="own_labels",
                                help_text="Set: a label of this mailbox only (made in its webmail); empty: account-wide.")
    name = models.CharField(max_length=64)
    color = models.CharField(max_length=7)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "name"], condition=models.Q(mailbox__isnull=True),
                                    name="label_name_unique_per_account"),
            models.UniqueConstraint(fields=["mailbox", "name"], name="label_name_unique_per_mailbox"),
        ]

    @property
    def keyword(self) -> str:
        return f"$label{self.pk}"
