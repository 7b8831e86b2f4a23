"""Writes for domains: claiming a name, verifying its DNS, re-checking pending ones, deleting."""
import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from mailcore.accounts.models import Account, HostingPartner
from mailcore.domains.dkim import dkim_key_for
from mailcore.domains.dnscheck import check_records, expected_records
from mailcore.domains.models import Domain
from mailcore.domains.names import InvalidHostname, hostname_to_ascii
from mailcore.events.services import emit
from mailcore.mailboxes.models import Alias
from mailcore.partners.models import PartnerClient

RECHECK_DELAYS = [timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1), timedelta(hours=6)]
FAILURES_BEFORE_REPORT = 3


class InvalidDomainName(Exception):
    pass


class DomainTaken(Exception):
    pass


class DomainLimitReached(Exception):
    pass


class DomainHasMailboxes(Exception):
    pass


def _iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def domain_name_clean(name: str) -> str:
    """The ASCII (IDNA) form of a domain name, or InvalidDomainName saying why."""
    try:
        return hostname_to_ascii(name, noun="domain name")
    except InvalidHostname as error:
        raise InvalidDomainName(str(error)) from None


def domain_create(*, account: Account, name: str, client: PartnerClient | None = None) -> Domain:
    return Domain.objects.create(
        account=account, client=client, name=name.lower(), verification_token=secrets.token_hex(16),
        next_check_at=timezone.now() + RECHECK_DELAYS[0],
    )


def domain_add_for_partner(*, partner: HostingPartner, name: str, client: PartnerClient | None = None) -> Domain:
    """Claim a name for a partner's client (a new client named after the domain when none is given)."""
    ascii_name = domain_name_clean(name)
    with transaction.atomic():
        HostingPartner.objects.select_for_update().get(pk=partner.pk)  # one claim at a time per partner
        if Domain.objects.filter(name=ascii_name).exists():
            raise DomainTaken(f"{ascii_name} is already claimed")
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
        domain.dns_check = [record.public() for record in expected_records(domain)]  # nothing checked yet
        domain.save(update_fields=["dns_check"])
        emit(account=partner.account, name="partner_domain.added",
             data={"domain_id": domain.pk, "domain": domain.name, "client_id": client.pk})
    return domain


def domain_public_records(domain: Domain) -> list[dict] | None:
    """dns_records as the API shows them: the records to create (unchecked) or the last check;
    null once verified with every record right."""
    return domain.dns_check or None


def domain_mark_verified(*, domain: Domain) -> Domain:
    if not domain.is_verified:
        domain.status = Domain.Status.VERIFIED
        domain.verified_at = domain.verified_at or timezone.now()
        domain.save(update_fields=["status", "verified_at"])
    return domain


def domain_verify(*, domain: Domain) -> Domain:
    """Check the DNS now; MX and ownership decide. Emits the spec's events."""
    records = check_records(domain)
    by_key = {record.key: record for record in records}
    passed = bool(by_key["mx"].ok and by_key["ownership"].ok)
    now = timezone.now()
    first_time = domain.verified_at is None
    with transaction.atomic():
        if passed:
            domain.status = Domain.Status.VERIFIED
            domain.verified_at = domain.verified_at or now
            domain.check_attempts, domain.next_check_at, domain.failure_reported_at = 0, None, None
            domain.dns_check = [] if all(record.ok for record in records) else [r.public() for r in records]
        else:
            if not domain.is_verified:  # a verified domain stays verified; its records show what broke
                domain.status = Domain.Status.FAILED
            domain.check_attempts += 1
            domain.dns_check = [record.public() for record in records]
            delay = RECHECK_DELAYS[min(domain.check_attempts - 1, len(RECHECK_DELAYS) - 1)]
            domain.next_check_at = now + delay
        domain.save()
        partner = getattr(domain.account, "partner", None)
        checks = {key: bool(by_key[key].ok) for key in ("mx", "spf", "dkim", "dmarc")}
        if passed and first_time:
            emit(account=domain.account, name="domain.verified",
                 data={"domain": domain.name, "verified_at": _iso(domain.verified_at), "checks": checks})
            if partner is not None:
                emit(account=domain.account, name="partner_domain.verified",
                     data={"domain_id": domain.pk, "domain": domain.name, "verified_at": _iso(domain.verified_at),
                           "checks": checks})
        elif not passed:
            failing = [r.public() for r in records if r.key in ("mx", "ownership") and not r.ok]
            if partner is not None:
                emit(account=domain.account, name="partner_domain.verification_failed",
                     data={"domain_id": domain.pk, "domain": domain.name, "attempt": domain.check_attempts,
                           "failed_records": failing})
            if domain.check_attempts >= FAILURES_BEFORE_REPORT and domain.failure_reported_at is None:
                domain.failure_reported_at = now
                domain.save(update_fields=["failure_reported_at"])
                emit(account=domain.account, name="domain.verification_failed",
                     data={"domain": domain.name, "attempts": domain.check_attempts, "failed_records": failing})
    return domain


def domains_recheck_due(*, limit: int = 50) -> int:
    """The background re-check of domains still waiting for their DNS."""
    now = timezone.now()
    due = Domain.objects.filter(status__in=[Domain.Status.PENDING, Domain.Status.FAILED], next_check_at__lte=now)
    count = 0
    for domain in due.select_related("account")[:limit]:
        claimed = Domain.objects.filter(pk=domain.pk, next_check_at=domain.next_check_at).update(
            next_check_at=now + RECHECK_DELAYS[0])
        if claimed:
            domain.next_check_at = now + RECHECK_DELAYS[0]
            domain_verify(domain=domain)
            count += 1
    return count


def domain_delete(*, domain: Domain) -> None:
    with transaction.atomic():
        if domain.mailboxes.filter(is_active=True).exists() or domain.mailboxes.filter(
                partner_mailbox__isnull=False).exists():
            raise DomainHasMailboxes(f"{domain.name} still has mailboxes; delete them first")
        domain.mailboxes.all().delete()  # accounts deactivated earlier, kept until their domain goes
        # aliases on this name go too, so a later owner of the name never feeds our mailboxes
        Alias.objects.filter(address__iendswith=f"@{domain.name}").delete()
        domain.delete()
