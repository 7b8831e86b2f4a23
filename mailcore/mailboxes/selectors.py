"""Reads of mailboxes, scoped to the caller's account."""
from django.db.models import QuerySet

from mailcore.accounts.models import Account
from mailcore.mailboxes.models import Label, Mailbox


def mailbox_list(*, account: Account) -> QuerySet[Mailbox]:
    return Mailbox.objects.filter(account=account).select_related("plan", "domain")


def mailbox_get_by_address(*, account: Account, address: str) -> Mailbox:
    """The account's mailbox with this address; another account's is Mailbox.DoesNotExist."""
    return Mailbox.objects.select_related("plan", "account__plan").get(account=account, address=address.strip().lower())


def label_list(*, account: Account) -> QuerySet[Label]:
    return Label.objects.filter(account=account)


def label_get(*, account: Account, label_id: int) -> Label:
    return Label.objects.get(account=account, pk=label_id)
