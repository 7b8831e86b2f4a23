"""A hosting partner's side of pay-as-you-go: its retail prices, its ledger of margins, its payouts."""
from django.db import models

from billing.models.prices import CURRENCY_CHOICES
from billing.money import Money


class RetailPrice(models.Model):
    """What a partner charges its customer per mailbox and month (at least our wholesale rate)."""

    partner = models.ForeignKey("mailcore.HostingPartner", on_delete=models.CASCADE, related_name="retail_prices")
    plan_type = models.CharField(max_length=16)
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    amount_minor = models.PositiveBigIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["plan_type", "currency"]
        constraints = [models.UniqueConstraint(fields=["partner", "plan_type", "currency"], name="retail_price_once")]

    def __str__(self) -> str:
        return f"{self.plan_type.title()} retail price: {Money(int(self.amount_minor), self.currency)} a month"


class LedgerEntry(models.Model):
    """One movement of a partner's balance, in one currency: a margin credited for a confirmed
    payment, a debit for a refund or dispute, a payout reserved, released or paid."""

    class Kind(models.TextChoices):
        MARGIN = "margin", "Margin on a payment"
        REFUND = "refund", "Refund"
        PAYOUT = "payout", "Payout requested"
        PAYOUT_RELEASED = "payout_released", "Payout rejected, released"

    partner = models.ForeignKey("mailcore.HostingPartner", on_delete=models.CASCADE, related_name="ledger")
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    amount_minor = models.BigIntegerField(help_text="Positive credits the partner, negative debits.")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    payment = models.ForeignKey("billing.Payment", on_delete=models.PROTECT, null=True, blank=True,
                                related_name="ledger_entries")
    payout = models.ForeignKey("billing.Payout", on_delete=models.PROTECT, null=True, blank=True,
                               related_name="ledger_entries")
    description = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["payment", "kind"], condition=models.Q(payment__isnull=False),
                                               name="ledger_once_per_payment")]
        verbose_name_plural = "ledger entries"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.amount}: {self.description}"

    @property
    def amount(self) -> Money:
        return Money(int(self.amount_minor), self.currency)


class Payout(models.Model):
    class Status(models.TextChoices):
        REQUESTED = "requested", "Requested"
        PAID = "paid", "Paid"
        REJECTED = "rejected", "Rejected"

    partner = models.ForeignKey("mailcore.HostingPartner", on_delete=models.CASCADE, related_name="payouts")
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    amount_minor = models.PositiveBigIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    note = models.CharField(max_length=500, blank=True, help_text="Told to the partner (rejection reason, transfer id).")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Payout #{self.pk} of {self.amount} ({self.get_status_display().lower()})"

    @property
    def amount(self) -> Money:
        return Money(int(self.amount_minor), self.currency)
