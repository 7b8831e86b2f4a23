"""A hosting partner's domains: claiming a name for a client (within the domain limit) and
deleting it with what hangs on the name."""
from django.db import IntegrityError, transaction

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.partners.models import HostingPartner
from mailcore.domains.dkim import dkim_key_for
from mailcore.domains.dnscheck import expected_records
from mailcore.domains.models import Domain
from mailcore.domains.services import domain_claim_lapsed, domain_claim_proven, domain_create, domain_name_clean
from mailcore.events.services import emit
from mailcore.mailboxes.aliases import domain_aliases_delete
from mailcore.partners.models import PartnerClient


class DomainTaken(DomainError):
    code = ErrorCode.CONFLICT


class DomainLimitReached(DomainError):
    code = ErrorCode.PAYMENT_REQUIRED


class DomainHasMailboxes(DomainError):
    code = ErrorCode.CONFLICT


class DomainHasAliasDomains(DomainError):
    code = ErrorCode.CONFLICT


def _alias_client(alias_of: Domain, client: PartnerClient | None) -> PartnerClient:
    """The client an alias domain belongs to: its primary's. No chains (hence no loops)."""
    if alias_of.alias_of_id is not None:
        raise InvalidFields({"alias_of": [f"{alias_of.name} is itself an alias of {alias_of.alias_of.name}; "
                                          f"make the new domain an alias of {alias_of.alias_of.name}"]})
    if client is not None and client.pk != alias_of.client_id:
        raise InvalidFields({"client_id": [f"an alias domain belongs to the client of {alias_of.name}"]})
    return alias_of.client


def domain_add_for_partner(*, partner: HostingPartner, name: str, client: PartnerClient | None = None,
                           alias_of: Domain | None = None) -> Domain:
    """Claim a name for a partner's client (a new client named after the domain when none is given);
    with `alias_of` (one of the partner's domains, found by the caller) x@name will reach x@alias_of
    once both are verified."""
    ascii_name = domain_name_clean(name)
    if alias_of is not None:
        client = _alias_client(alias_of, client)
    holder = Domain.objects.filter(name=ascii_name).first()
    if holder is not None and _releasable(holder) and domain_claim_proven(domain=holder):
        raise DomainTaken(f"{ascii_name} is already claimed")  # its holder's DNS proves it now: kept
    with transaction.atomic():
        HostingPartner.objects.select_for_update().get(pk=partner.pk)  # one claim at a time per partner
        holder = Domain.objects.select_for_update().filter(name=ascii_name).first()  # vs. its holder's verify
        if holder is not None:
            if not _releasable(holder):
                raise DomainTaken(f"{ascii_name} is already claimed")
            domain_delete(domain=holder)  # an unverified claim past its week, unproven: the name is free again
        if Domain.objects.filter(account=partner.account).count() >= partner.domain_limit:
            raise DomainLimitReached(
                f"your domain limit is {partner.domain_limit}; buy a domain slot add-on to add more")
        if client is None:
            client = PartnerClient.objects.create(partner=partner, name=ascii_name)
        try:
            with transaction.atomic():
                domain = domain_create(account=partner.account, name=ascii_name, client=client, alias_of=alias_of)
        except IntegrityError:
            raise DomainTaken(f"{ascii_name} is already claimed") from None
        dkim_key_for(ascii_name)  # generated on first use of the name, reused after
        domain.dns_check = [record.stored() for record in expected_records(domain)]  # nothing checked yet
        domain.save(update_fields=["dns_check"])
        emit(account=partner.account, name="partner_domain.added",
             data={"domain_id": domain.pk, "domain": domain.name, "client_id": client.pk})
    return domain


def _releasable(holder: Domain) -> bool:
    return domain_claim_lapsed(holder) and not holder.mailboxes.exists()


def domain_delete(*, domain: Domain) -> None:
    with transaction.atomic():
        if domain.mailboxes.filter(is_active=True).exists() or domain.mailboxes.filter(
                partner_mailbox__isnull=False).exists():
            raise DomainHasMailboxes(f"{domain.name} still has mailboxes; delete them first")
        if domain.alias_domains.exists():
            names = ", ".join(domain.alias_domains.values_list("name", flat=True))
            raise DomainHasAliasDomains(f"{domain.name} has alias domains ({names}); delete them first")
        domain.mailboxes.all().delete()  # accounts deactivated earlier, kept until their domain goes
        domain_aliases_delete(domain_name=domain.name)
        domain.delete()
