"""The three plans as data. Change quotas and features here (or in the admin), not in code."""
from django.db import migrations

PLANS = [
    dict(code="free", name="Free", rank=0, webhooks=False, contacts=False, calendar=False, read_receipts=False,
         ai_agent_tools=False, campaigns=False, sends_per_day=100, sends_per_hour=20, storage_mb=1024,
         ai_requests_per_day=0, attachment_max_mb=10),
    dict(code="pro", name="Pro", rank=1, webhooks=False, contacts=True, calendar=True, read_receipts=True,
         ai_agent_tools=True, campaigns=False, sends_per_day=2000, sends_per_hour=300, storage_mb=5 * 1024,
         ai_requests_per_day=200, attachment_max_mb=25),
    dict(code="premium", name="Premium", rank=2, webhooks=True, contacts=True, calendar=True, read_receipts=True,
         ai_agent_tools=True, campaigns=True, sends_per_day=10000, sends_per_hour=1500, storage_mb=20 * 1024,
         ai_requests_per_day=None, attachment_max_mb=35),
]


def create_plans(apps, schema_editor):
    Plan = apps.get_model("mailcore", "Plan")
    for row in PLANS:
        Plan.objects.update_or_create(code=row["code"], defaults=row)


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0001_initial")]
    operations = [migrations.RunPython(create_plans, migrations.RunPython.noop)]
