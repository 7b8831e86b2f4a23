"""Reads of mailboxes, scoped to the caller's account."""
from django.db.models import Q, QuerySet

from mailcore.accounts.models import Account
from mailcore.mailboxes.models import Label, Mailbox


def mailbox_list(*, account: Account) -> QuerySet[Mailbox]:
    return Mailbox.objects.filter(account=account).select_related("plan", "domain")


def mailbox_get_by_address(*, account: Account, address: str) -> Mailbox:
    """The account's mailbox with this address; another account's is Mailbox.DoesNotExist."""
    return Mailbox.objects.select_related("plan", "account__plan").get(account=account, address=address.strip().lower())


def label_list(*, account: Account) -> QuerySet[Label]:
    """The account-wide labels (the label API's)."""
    return Label.objects.filter(account=account, mailbox__isnull=True)


def label_get(*, account: Account, label_id: int) -> Label:
    return Label.objects.get(account=account, mailbox__isnull=True, pk=label_id)


def labels_for_mailbox(*, mailbox: Mailbox) -> QuerySet[Label]:
    """The labels a mailbox's messages can carry: its own (made in its webmail) and, unless the
    account is a hosting partner whose mailboxes belong to different customers, the account's."""
    account_wide = Q(account=mailbox.account_id, mailbox__isnull=True, account__partner__isnull=True)
    return Label.objects.filter(Q(mailbox=mailbox) | account_wide)  # one query, the partner check in it


def own_label_get(*, mailbox: Mailbox, label_id: int) -> Label:
    """A label the mailbox made itself (its webmail may delete only those); else Label.DoesNotExist."""
    return Label.objects.get(mailbox=mailbox, pk=label_id)
