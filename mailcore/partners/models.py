from django.db import models

from mailcore.accounts.models import Account


class LapseAction(models.TextChoices):
    SUSPEND = "suspend", "Suspend"
    DOWNGRADE_FREE = "downgrade_free", "Downgrade to Free"


class HostingPartner(models.Model):
    """The reseller profile an account may carry."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending approval"
        TRIAL = "trial", "Trial"
        ACTIVE = "active", "Active"
        EXPIRED = "expired", "Expired"
        SUSPENDED = "suspended", "Suspended"
        REJECTED = "rejected", "Application declined"

    class Currency(models.TextChoices):
        USD = "usd", "USD"
        NGN = "ngn", "NGN"

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="partner")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    default_client_lapse_action = models.CharField(
        max_length=16, choices=LapseAction.choices, default=LapseAction.SUSPEND
    )
    trial_ends_at = models.DateTimeField(null=True, blank=True)
    trial_mailbox_allowance = models.PositiveSmallIntegerField(
        default=3, help_text="Mailboxes a trial partner may create without slots, until the trial ends."
    )
    extra_domain_slots = models.PositiveIntegerField(default=0, help_text="Bought as add-ons.")
    extra_storage_mb = models.PositiveIntegerField(default=0, help_text="Bought as add-ons.")
    trial_notice_sent_at = models.DateTimeField(null=True, blank=True)
    billing_currency = models.CharField(max_length=3, choices=Currency.choices, default=Currency.USD,
                                        help_text="Chosen at approval: every price and purchase is in it.")
    decided_at = models.DateTimeField(null=True, blank=True, help_text="When the application was approved or declined.")
    decision_note = models.CharField(max_length=500, blank=True, help_text="Told to the applicant.")
    created_at = models.DateTimeField(auto_now_add=True)

    FREE_DOMAIN_SLOTS = 2

    def __str__(self) -> str:
        return f"{self.account.name} (partner, {self.get_status_display().lower()})"

    @property
    def domain_limit(self) -> int:
        return self.FREE_DOMAIN_SLOTS + self.extra_domain_slots

    @property
    def is_operational(self) -> bool:
        """Only approved partners in trial or active may use the hosting API."""
        return self.status in {self.Status.TRIAL, self.Status.ACTIVE}


class PartnerClient(models.Model):
    """A hosting partner's own customer; it owns domains and, through them, mailboxes."""

    partner = models.ForeignKey(HostingPartner, on_delete=models.CASCADE, related_name="clients")
    name = models.CharField(max_length=200)
    lapse_action_override = models.CharField(max_length=16, choices=LapseAction.choices, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class MailboxSlot(models.Model):
    """One prepaid mailbox-term in a partner's pool: unused until it funds a mailbox."""

    class Status(models.TextChoices):
        UNUSED = "unused", "Unused"
        ASSIGNED = "assigned", "Assigned"
        EXPIRED = "expired", "Expired"

    partner = models.ForeignKey(HostingPartner, on_delete=models.CASCADE, related_name="slots")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNUSED)
    plan_type = models.CharField(max_length=16, blank=True, help_text="pro or premium; blank funds either.")
    term_days = models.PositiveSmallIntegerField(default=30, help_text="How long a mailbox it funds runs.")
    purchased_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="When an assigned slot's term ends.")

    class Meta:
        ordering = ["purchased_at", "id"]
        indexes = [models.Index(fields=["partner", "status"])]

    def __str__(self) -> str:
        plan = self.plan_type.title() if self.plan_type else "Any-plan"
        return f"{plan} slot #{self.pk}, {self.term_days} days ({self.get_status_display().lower()})"


class PartnerMailbox(models.Model):
    """A partner's client mailbox: its funding, status and term. The mail account is `mailbox`."""

    class Status(models.TextChoices):
        TRIAL = "trial", "Trial"
        ACTIVE = "active", "Active"
        EXPIRED = "expired", "Expired"
        SUSPENDED = "suspended", "Suspended"
        PENDING_PAYMENT = "pending_payment", "Pending payment"

    class Funding(models.TextChoices):
        SLOT = "slot", "Slot pool"
        PAY_AS_YOU_GO = "pay_as_you_go", "Pay as you go"

    partner = models.ForeignKey(HostingPartner, on_delete=models.CASCADE, related_name="mailboxes")
    mailbox = models.OneToOneField("mailcore.Mailbox", on_delete=models.CASCADE, related_name="partner_mailbox")
    slot = models.OneToOneField(MailboxSlot, on_delete=models.SET_NULL, null=True, blank=True, related_name="mailbox")
    plan_type = models.CharField(max_length=16)
    status = models.CharField(max_length=16, choices=Status.choices)
    funding_mode = models.CharField(max_length=16, choices=Funding.choices, default=Funding.SLOT)
    expires_at = models.DateTimeField()
    expiring_notice_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["partner", "status"]), models.Index(fields=["expires_at"]),
                   # the mailbox list's newest-first page and the dashboard's terms ending soon, at 10,000
                   models.Index(fields=["partner", "-created_at", "-id"], name="partnermailbox_newest_idx"),
                   models.Index(fields=["partner", "expires_at"], name="partnermailbox_ending_idx")]
        verbose_name_plural = "partner mailboxes"

    def __str__(self) -> str:
        return f"{self.mailbox.address} ({self.plan_type}, {self.get_status_display().lower()})"

    @property
    def is_trial(self) -> bool:
        return self.status == self.Status.TRIAL
