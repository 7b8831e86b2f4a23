"""Seed the price table with the launch figures (an operator changes them in the console)."""
from django.db import migrations

LAUNCH_PRICES = {
    "plan:pro": {"usd": 900, "ngn": 900_000},
    "plan:premium": {"usd": 2_900, "ngn": 2_900_000},
    "wholesale:pro": {"usd": 200, "ngn": 300_000},
    "wholesale:premium": {"usd": 500, "ngn": 750_000},
    "slot:pro": {"usd": 200, "ngn": 300_000},
    "slot:premium": {"usd": 500, "ngn": 750_000},
    "domain_slot": {"usd": 500, "ngn": 500_000},
    "storage_gb": {"usd": 50, "ngn": 50_000},
}


def seed(apps, schema_editor):
    Price = apps.get_model("billing", "Price")
    for item, amounts in LAUNCH_PRICES.items():
        for currency, amount_minor in amounts.items():
            Price.objects.get_or_create(item=item, currency=currency, defaults={"amount_minor": amount_minor})


class Migration(migrations.Migration):
    dependencies = [("billing", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
