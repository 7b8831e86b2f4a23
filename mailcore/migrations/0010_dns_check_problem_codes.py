"""Stored DNS checks gain each record's key and problem code, read once from the old reason text,
so nothing decides on the English words any more."""
from django.db import migrations

KEYS = ["mx", "ownership", "spf", "dmarc", "dkim"]
PROBLEMS = [  # (key, what the old reason said, code)
    ("mx", "no MX record", "no_mx"), ("mx", "MX points to", "mx_elsewhere"),
    ("ownership", "does not match", "token_mismatch"), ("ownership", "no verification", "no_token"),
    ("spf", "two SPF", "two_spf"), ("spf", "lacks", "spf_lacks_relay"), ("spf", "no SPF", "no_spf"),
    ("dmarc", "two DMARC", "two_dmarc"), ("dmarc", "no policy", "dmarc_no_policy"), ("dmarc", "no DMARC", "no_dmarc"),
    ("dkim", "does not match", "dkim_mismatch"), ("dkim", "no DKIM", "no_dkim"),
]


def add_codes(apps, schema_editor):
    Domain = apps.get_model("mailcore", "Domain")
    for domain in Domain.objects.filter(dns_check__isnull=False):
        rows = []  # an empty check (verified, all right) stays empty
        for index, row in enumerate(domain.dns_check):
            key = row.get("key") or (KEYS[index] if index < len(KEYS) else row.get("type", "").lower())
            reason = row.get("reason") or ""
            problem = next((code for k, words, code in PROBLEMS if k == key and words in reason), None)
            rows.append({**row, "key": key, "problem": row.get("problem", problem if row.get("ok") is False else None)})
        domain.dns_check = rows
        domain.save(update_fields=["dns_check"])


def drop_codes(apps, schema_editor):
    Domain = apps.get_model("mailcore", "Domain")
    for domain in Domain.objects.filter(dns_check__isnull=False):
        domain.dns_check = [{k: v for k, v in row.items() if k not in ("key", "problem")} for row in domain.dns_check]
        domain.save(update_fields=["dns_check"])


class Migration(migrations.Migration):
    dependencies = [("mailcore", "0009_outbound_held_and_finished")]
    operations = [migrations.RunPython(add_codes, drop_codes)]
