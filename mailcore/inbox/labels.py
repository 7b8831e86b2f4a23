"""Labels: account-wide names and colours, carried on messages as IMAP keywords."""
import re

from django.db import IntegrityError, transaction

from mailcore.accounts.models import Account
from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Label, Mailbox
from mailcore.store.factory import store_for

HEX_COLOR = re.compile(r"^#[0-9a-fA-F]{6}$")


def label_create(*, account: Account, name: str, color: str, mailbox: Mailbox | None = None) -> Label:
    """An account-wide label (the label API), or one of a single mailbox (its webmail)."""
    errors = {}
    if not name.strip():
        errors["name"] = ["name must not be blank"]
    if not HEX_COLOR.match(color or ""):
        errors["color"] = ["color must be a hex colour such as #1a73e8"]
    if errors:
        raise InvalidFields(errors)
    try:
        with transaction.atomic():
            return Label.objects.create(account=account, mailbox=mailbox, name=name.strip(), color=color.lower())
    except IntegrityError:
        raise InvalidFields({"name": [f"a label named {name.strip()!r} exists already"]}) from None


def label_delete(*, label: Label) -> None:
    """Delete the label and take its keyword off every message of every mailbox it could be on."""
    mailboxes = Mailbox.objects.filter(account=label.account_id, is_active=True)
    if label.mailbox_id is not None:
        mailboxes = mailboxes.filter(pk=label.mailbox_id)
    for mailbox in mailboxes:
        store_for(mailbox).remove_keyword_everywhere(label.keyword)
    label.delete()
