"""Aliases: more addresses for a mailbox, on the account's own domains, each address used once."""
import re

from django.db import IntegrityError, transaction

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.domains.models import Domain
from mailcore.domains.report_addresses import is_report_local_part
from mailcore.hooks import Hook
from mailcore.mailboxes.models import Alias, Mailbox

# A mailbox's aliases changed (called with mailbox=, in the change's transaction): its Sieve script,
# which names them, is published again (mailcore.rules registers it).
aliases_changed = Hook("aliases_changed")

# No "+": that is the subaddress delimiter, so "ann+news" already reaches ann.
ALIAS_LOCAL_PART = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$")


class AliasTaken(DomainError):
    """A mailbox or another alias already has the address."""

    code = ErrorCode.CONFLICT


def _address_taken(address: str) -> bool:
    return (Mailbox.objects.filter(address__iexact=address, kind=Mailbox.Kind.MANAGED).exists()
            or Alias.objects.filter(address__iexact=address).exists())


def alias_create(*, mailbox: Mailbox, alias_address: str) -> Alias:
    """An address on a domain of the mailbox's account (mail reaches it once the domain is verified)."""
    address = (alias_address or "").strip().lower()
    local_part, at, domain_name = address.rpartition("@")
    if not at or not ALIAS_LOCAL_PART.match(local_part) or ".." in local_part:
        raise InvalidFields({"alias_address": [
            "enter an address whose local part has letters, digits and . _ - (not at the start or end), at most 64"]})
    if is_report_local_part(local_part):
        raise InvalidFields({"alias_address": [f"{local_part}@ receives the domain's DMARC and TLS reports"]})
    if not Domain.objects.filter(account=mailbox.account_id, name=domain_name).exists():
        raise InvalidFields({"alias_address": [f"{domain_name} is not one of this account's domains"]})
    if _address_taken(address):
        raise AliasTaken(f"{address} is already in use")
    try:
        with transaction.atomic():
            alias = Alias.objects.create(mailbox=mailbox, address=address)
            aliases_changed(mailbox=mailbox)
            return alias
    except IntegrityError:  # taken between the check and the insert
        raise AliasTaken(f"{address} is already in use") from None


def alias_delete(*, alias: Alias) -> None:
    with transaction.atomic():
        alias.delete()
        aliases_changed(mailbox=alias.mailbox)


def domain_aliases_delete(*, domain_name: str) -> None:
    """A domain leaves: its aliases go too, so a later owner of the name never feeds our mailboxes."""
    held_by = set(Alias.objects.filter(address__iendswith=f"@{domain_name}").values_list("mailbox_id", flat=True))
    Alias.objects.filter(address__iendswith=f"@{domain_name}").delete()
    for mailbox in Mailbox.objects.filter(pk__in=held_by):
        aliases_changed(mailbox=mailbox)
