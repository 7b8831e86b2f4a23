"""Catch-all addresses and alias domains: where mail to an address no mailbox or alias names goes.

An alias domain mirrors its primary (x@alias reaches what x@primary reaches: a mailbox, an alias, a
subaddress, else the primary's catch-all); a domain's catch-all mailbox gets every other local part.
Both apply only on verified domains (an alias domain and its primary both), and only after every
named address: a mailbox, a return path, SRS and report addresses, aliases (the listener's order,
mailcore.inbound.recipients). Postfix answers the same at RCPT (docker/postfix/pgsql/*.cf).
"""
from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import mailbox_reached_by


def _catch_all_of(domain: Domain) -> Mailbox | None:
    mailbox = domain.catch_all
    if mailbox is None or not mailbox.is_managed or not mailbox.is_active:
        return None  # a disabled catch-all refuses like an unknown address, as Postfix does
    return Mailbox.objects.select_related("account__plan", "plan").get(pk=mailbox.pk)


def routed_mailbox(address: str) -> Mailbox | None:
    """The mailbox an unnamed address on a verified domain reaches through its alias domain mapping
    or a catch-all; None when neither applies."""
    local_part, _, domain_name = address.lower().rpartition("@")
    domain = (Domain.objects.select_related("alias_of__catch_all", "catch_all")
              .filter(name=domain_name, status=Domain.Status.VERIFIED).first())
    if domain is None:
        return None
    primary = domain.alias_of
    if primary is None:
        return _catch_all_of(domain)
    if not primary.is_verified:
        return None
    return mailbox_reached_by(f"{local_part}@{primary.name}") or _catch_all_of(primary)


def domain_catch_all_set(*, domain: Domain, address: str) -> Domain:
    """Route the domain's unknown local parts to one of its own active mailboxes."""
    if domain.alias_of_id is not None:
        raise InvalidFields({"address": [f"{domain.name} is an alias of {domain.alias_of.name}: its mail follows "
                                         f"{domain.alias_of.name}'s catch-all"]})
    mailbox = Mailbox.objects.filter(domain=domain, address__iexact=(address or "").strip(),
                                     kind=Mailbox.Kind.MANAGED).first()
    if mailbox is None:
        raise InvalidFields({"address": [f"{address} is not a mailbox of this account on {domain.name}"]})
    if not mailbox.is_active:
        raise InvalidFields({"address": [f"{mailbox.address} is disabled"]})
    domain.catch_all = mailbox
    domain.save(update_fields=["catch_all"])
    return domain


def domain_catch_all_clear(*, domain: Domain) -> Domain:
    """Unknown local parts are refused again (550 5.1.1)."""
    domain.catch_all = None
    domain.save(update_fields=["catch_all"])
    return domain
