"""Connected mailboxes made before ownership had to be proved, on an address hosted here: on a
domain another account has verified, or a hosted mailbox's address, alias or subaddress. They are
forgotten with their logins (their mail stays at the provider); see docs/decisions.md."""
from django.db import migrations


def _base(address: str) -> str:
    local, _, domain = address.lower().partition("@")
    return f"{local.partition('+')[0]}@{domain}"


def forget_unproven_connected(apps, schema_editor):
    Mailbox = apps.get_model("mailcore", "Mailbox")
    Alias = apps.get_model("mailcore", "Alias")
    Domain = apps.get_model("mailcore", "Domain")
    connected = list(Mailbox.objects.filter(kind="connected").values_list("pk", "account_id", "address"))
    if not connected:
        return
    verified = dict(Domain.objects.filter(status="verified").values_list("name", "account_id"))
    hosted = {address.lower() for address in Mailbox.objects.filter(kind="managed").values_list("address", flat=True)}
    hosted |= {address.lower() for address in Alias.objects.values_list("address", flat=True)}
    doomed = []
    for pk, account_id, address in connected:
        domain = address.lower().rpartition("@")[2]
        owner = verified.get(domain)
        if (owner is not None and owner != account_id) or address.lower() in hosted or _base(address) in hosted:
            doomed.append(pk)
    Mailbox.objects.filter(pk__in=doomed).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("mailcore", "0032_books_addressbook_color"),
    ]

    operations = [
        migrations.RunPython(forget_unproven_connected, migrations.RunPython.noop),
    ]
