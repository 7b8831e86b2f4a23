"""The one price table an operator edits (in the console); seeded with the launch figures."""
from django.db import models

CURRENCY_CHOICES = [("usd", "USD"), ("ngn", "NGN")]


class Price(models.Model):
    class Item(models.TextChoices):
        PLAN_PRO = "plan:pro", "Pro plan (account, per month)"
        PLAN_PREMIUM = "plan:premium", "Premium plan (account, per month)"
        WHOLESALE_PRO = "wholesale:pro", "Wholesale Pro mailbox (per month)"
        WHOLESALE_PREMIUM = "wholesale:premium", "Wholesale Premium mailbox (per month)"
        SLOT_PRO = "slot:pro", "Pro mailbox slot (per monthly term)"
        SLOT_PREMIUM = "slot:premium", "Premium mailbox slot (per monthly term)"
        DOMAIN_SLOT = "domain_slot", "Domain slot (one-off)"
        STORAGE_GB = "storage_gb", "Extra storage (per GB, one-off)"

    item = models.CharField(max_length=32, choices=Item.choices)
    currency = models.CharField(max_length=3, choices=CURRENCY_CHOICES)
    amount_minor = models.PositiveIntegerField(help_text="In minor units: cents or kobo.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "currency"]
        constraints = [models.UniqueConstraint(fields=["item", "currency"], name="price_item_currency")]

    def __str__(self) -> str:
        return f"{self.get_item_display()} {self.currency.upper()} {self.amount_minor}"
