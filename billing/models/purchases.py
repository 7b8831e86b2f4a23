"""What was bought (a purchase per checkout), the subscriptions that renew it, and each payment taken
(the payment history and its receipts)."""
from django.db import models

from billing.models.prices import CURRENCY_CHOICES
from billing.money import Money


class BillingCustomer(models.Model):
    """A paying account's customer record at one provider (a Stripe customer id, a Paystack email)."""

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="billing_customers")
    provider = models.CharField(max_length=16)
    external_id = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["account", "provider"], name="customer_per_provider")]


class Purchase(models.Model):
    """One checkout: what, how much, and where it stands. Its effect is applied once, on the
    provider's confirmed event (`applied_at`)."""

    class Kind(models.TextChoices):
        PLAN = "plan", "Account plan"
        SLOT_POOL = "slot_pool", "Mailbox slot pool"
        DOMAIN_SLOT = "domain_slot", "Domain slots"
        STORAGE = "storage", "Extra storage"
        MAILBOX = "mailbox", "Pay-as-you-go mailbox"
        MAILBOX_STORAGE = "mailbox_storage", "Extra storage for a pay-as-you-go mailbox"
        MAILBOX_EXTRA = "mailbox_extra", "Extra mailbox for a pay-as-you-go customer"

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for payment"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"
        EXPIRED = "expired", "Expired"
        REFUNDED = "refunded", "Refunded"

    class Method(models.TextChoices):
        CARD = "card", "Card"
        BANK_TRANSFER = "bank_transfer", "Bank transfer"

    reference = models.CharField(max_length=40, unique=True, help_text="Ours; shown to the buyer.")
    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="purchases")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    item = models.CharField(max_length=32, help_text="The plan code for plans and slot pools.", blank=True)
    quantity = models.PositiveIntegerField(default=1)
    months = models.PositiveSmallIntegerField(default=1, help_text="Slot pools: months per slot.")
    amount_minor = models.PositiveBigIntegerField()
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    recurring = models.BooleanField(default=False, help_text="A monthly subscription checkout.")
    payment_method = models.CharField(max_length=16, choices=Method.choices, default=Method.CARD)
    provider = models.CharField(max_length=16)
    provider_ref = models.CharField(max_length=128, blank=True, db_index=True,
                                    help_text="The provider's checkout session or transaction reference.")
    checkout_url = models.URLField(max_length=2000, blank=True)
    return_url = models.URLField(max_length=2000, blank=True)
    description = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    partner_mailbox = models.ForeignKey("mailcore.PartnerMailbox", on_delete=models.SET_NULL, null=True, blank=True,
                                        related_name="purchases", help_text="Pay-as-you-go: the mailbox it pays for.")
    wholesale_minor = models.PositiveBigIntegerField(
        default=0, help_text="Pay-as-you-go: what we keep of each payment; the rest is the partner's margin.")
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.reference


class Subscription(models.Model):
    """A monthly subscription at a provider: today only account plans (Pro, Premium)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAST_DUE = "past_due", "Renewal failed, retrying"
        CANCELED = "canceled", "Canceled"

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="subscriptions")
    purchase = models.OneToOneField(Purchase, on_delete=models.PROTECT, related_name="subscription")
    provider = models.CharField(max_length=16)
    provider_ref = models.CharField(max_length=128)
    plan_code = models.CharField(max_length=32)
    partner_mailbox = models.ForeignKey("mailcore.PartnerMailbox", on_delete=models.SET_NULL, null=True, blank=True,
                                        related_name="subscriptions", help_text="Pay-as-you-go mailbox subscriptions.")
    amount_minor = models.PositiveBigIntegerField()
    wholesale_minor = models.PositiveBigIntegerField(default=0, help_text="Pay-as-you-go: our part of each renewal.")
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    current_period_start = models.DateTimeField()
    current_period_end = models.DateTimeField()
    cancel_at_period_end = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["provider", "provider_ref"], name="subscription_ref")]

    def __str__(self) -> str:
        return f"{self.plan_code.title()} subscription {self.provider_ref} ({self.get_status_display().lower()})"


class Payment(models.Model):
    """Money taken (first payment or renewal), one row per provider charge: the receipt."""

    account = models.ForeignKey("mailcore.Account", on_delete=models.CASCADE, related_name="payments")
    purchase = models.ForeignKey(Purchase, on_delete=models.PROTECT, related_name="payments")
    provider = models.CharField(max_length=16)
    provider_ref = models.CharField(max_length=128, help_text="The charge or invoice at the provider.")
    amount_minor = models.PositiveBigIntegerField()
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    description = models.CharField(max_length=200)
    paid_at = models.DateTimeField()
    refunded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-paid_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["provider", "provider_ref"], name="payment_ref")]

    def __str__(self) -> str:
        return f"Payment {self.provider_ref}: {Money(int(self.amount_minor), self.currency)}"

    @property
    def receipt_number(self) -> str:
        return f"MW-{self.paid_at:%Y%m}-{self.pk:06d}"
