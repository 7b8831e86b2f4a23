"""A hosting partner's domains: claiming a name for a client (within the domain limit) and
deleting it with what hangs on the name."""
from django.db import IntegrityError, transaction

from mailcore.errors import DomainError, ErrorCode
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


def domain_add_for_partner(*, partner: HostingPartner, name: str, client: PartnerClient | None = None) -> Domain:
    """Claim a name for a partner's client (a new client named after the domain when none is given)."""
    ascii_name = domain_name_clean(name)
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
                domain = domain_create(account=partner.account, name=ascii_name, client=client)
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
        domain.mailboxes.all().delete()  # accounts deactivated earlier, kept until their domain goes
        domain_aliases_delete(domain_name=domain.name)
        domain.delete()
