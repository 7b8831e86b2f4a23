"""Reads of mailboxes, scoped to the caller's account."""
from django.db.models import Q, QuerySet

from mailcore.accounts.models import Account
from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Alias, Label, Mailbox

SUBADDRESS_DELIMITER = "+"


def mailbox_list(*, account: Account) -> QuerySet[Mailbox]:
    return Mailbox.objects.filter(account=account).select_related("plan", "domain")


def mailbox_get_by_address(*, account: Account, address: str) -> Mailbox:
    """The account's mailbox with this address; another account's is Mailbox.DoesNotExist."""
    return Mailbox.objects.select_related("plan", "account__plan").get(account=account, address=address.strip().lower())


def without_subaddress(address: str) -> str:
    """The address a subaddress reaches: ann+news@example.com is ann@example.com."""
    local_part, at, domain_name = address.rpartition("@")
    return f"{local_part.split(SUBADDRESS_DELIMITER, 1)[0]}{at}{domain_name}"


def own_addresses(mailbox: Mailbox) -> set[str]:
    """The mailbox's address and its aliases, lower-case."""
    return {mailbox.address.lower(), *(a.lower() for a in Alias.objects.filter(mailbox=mailbox)
                                       .values_list("address", flat=True))}


def is_own_address(address: str, own: set[str]) -> bool:
    """One of `own` (own_addresses), or a subaddress of one (ann+news@ reaches ann@)."""
    return address.lower() in own or without_subaddress(address.lower()) in own


def mailbox_reached_by(address: str) -> Mailbox | None:
    """The hosted mailbox an address reaches, of any account: its own address, an alias, or a
    subaddress of either; with its account and plans (delivery reads the quota, sending the
    limits). A connected mailbox is reached at its provider, never here."""
    for candidate in dict.fromkeys([address, without_subaddress(address)]):
        mailbox = Mailbox.objects.select_related("account__plan", "plan").filter(
            address__iexact=candidate, kind=Mailbox.Kind.MANAGED).first()
        if mailbox is None:
            alias = Alias.objects.select_related("mailbox__account__plan", "mailbox__plan").filter(
                address__iexact=candidate).first()
            mailbox = alias.mailbox if alias else None
        if mailbox is not None:
            return mailbox
    return None


def send_route(mailbox: Mailbox) -> str | None:
    """How mail from the mailbox leaves: "platform" (our relay, counted against its quota),
    "provider" (a connected mailbox's own submission server), or None (it cannot send). A connected
    mailbox goes through our relay only on a domain its account has verified, never in a stranger's
    name."""
    if mailbox.is_managed:
        return "platform"
    if mailbox.smtp_host:
        return "provider"
    domain_name = mailbox.address.rpartition("@")[2]
    if Domain.objects.filter(account=mailbox.account_id, name=domain_name, status=Domain.Status.VERIFIED).exists():
        return "platform"
    return None


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
