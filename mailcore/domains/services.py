"""Writes for domains: claiming a name, verifying its DNS, re-checking pending ones, deleting."""
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode
from mailcore.accounts.models import Account
from mailcore.domains.dnscheck import DnsProblem, DnsRecord, check_records, expected_records, public_record
from mailcore.domains.models import Domain
from mailcore.domains.names import InvalidHostname, hostname_to_ascii
from mailcore.domains.rotation import dkim_keys_seen, dkim_records_stored
from mailcore.events.services import emit
from mailcore.timefmt import iso

RECHECK_DELAYS = [timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1), timedelta(hours=6)]
FAILURES_BEFORE_REPORT = 3
# An unverified claim holds its name this long: then background checks stop and another account may
# claim the name (its claim removes this one); until then its owner can still verify it.
CLAIM_WINDOW = timedelta(days=7)


class InvalidDomainName(DomainError):
    code = ErrorCode.INVALID


class DomainClaimGone(DomainError):
    """The claim was given up (a lapsed claim another account took) while it was being checked."""

    code = ErrorCode.CONFLICT


def domain_name_clean(name: str) -> str:
    """The ASCII (IDNA) form of a domain name, or InvalidDomainName saying why."""
    try:
        return hostname_to_ascii(name, noun="domain name")
    except InvalidHostname as error:
        raise InvalidDomainName(str(error)) from None


def domain_create(*, account: Account, name: str, client=None, alias_of: Domain | None = None) -> Domain:
    """A pending domain; `client` is the partner client that owns it, if any; `alias_of` the domain it
    mirrors (checked by the caller: same client, not an alias itself)."""
    return Domain.objects.create(
        account=account, client=client, name=name.lower(), verification_token=secrets.token_hex(16), alias_of=alias_of,
        next_check_at=timezone.now() + RECHECK_DELAYS[0],
    )


def domain_public_records(domain: Domain) -> list[dict] | None:
    """dns_records as the API shows them: the records to create (unchecked) or the last check;
    null once verified with every record right."""
    return [public_record(record) for record in domain.dns_check] if domain.dns_check else None


def domain_records(domain: Domain) -> list[DnsRecord]:
    """The checked records with what the last check found (its problem codes); every one ok when the
    domain verified with all records right; unchecked before any check."""
    expected = expected_records(domain)
    if domain.is_verified and not domain.dns_check:
        for record in expected:
            record.ok = True if not record.optional else _optional_ok(domain, record)
        return expected
    by_key = {row.get("key"): row for row in domain.dns_check or []}
    for record in expected:
        row = by_key.get(record.key, {})
        for name in ("type", "host", "value", "description"):  # as stored: the API shows the same
            setattr(record, name, row.get(name, getattr(record, name)))
        record.ok, record.found_value, record.reason = row.get("ok"), row.get("found_value"), row.get("reason")
        record.problem = DnsProblem(row["problem"]) if row.get("problem") else None
    return expected


def _optional_ok(domain: Domain, record: DnsRecord) -> bool | None:
    """An optional record of a domain whose required records are all right: seen, or not checked."""
    return True if record.key == "tracking" and domain.tracking_host_seen_at else None


def domain_claim_lapsed(domain: Domain, now=None) -> bool:
    """An unverified claim older than CLAIM_WINDOW: it no longer keeps the name from anyone else."""
    return domain.verified_at is None and domain.created_at <= (now or timezone.now()) - CLAIM_WINDOW


def domain_mark_verified(*, domain: Domain) -> Domain:
    if not domain.is_verified:
        domain.status = Domain.Status.VERIFIED
        domain.verified_at = domain.verified_at or timezone.now()
        domain.save(update_fields=["status", "verified_at"])
    return domain


def _passed(records: list[DnsRecord]) -> bool:
    by_key = {record.key: record for record in records}
    return bool(by_key["mx"].ok and by_key["ownership"].ok)


def domain_verify(*, domain: Domain, records: list[DnsRecord] | None = None) -> Domain:
    """Check the DNS now (or apply `records`, a check just made); MX and ownership decide. Emits the
    spec's events. The row is locked while the result is written: a claim removed meanwhile is
    DomainClaimGone, never written back."""
    records = records if records is not None else check_records(domain)
    records = dkim_keys_seen(domain=domain, records=records)  # a rotation's new key found: it signs now
    by_key = {record.key: record for record in records}
    passed = _passed(records)
    now = timezone.now()
    with transaction.atomic():
        locked = Domain.objects.select_for_update().filter(pk=domain.pk).first()
        if locked is None:
            raise DomainClaimGone(f"{domain.name} is no longer claimed by this account: its claim lapsed "
                                  f"unverified and another account claimed the name")
        domain = locked
        first_time = domain.verified_at is None
        if passed:
            domain.status = Domain.Status.VERIFIED
            domain.verified_at = domain.verified_at or now
            domain.check_attempts, domain.next_check_at, domain.failure_reported_at = 0, None, None
            domain.dns_check = dkim_records_stored(records)
        else:
            if not domain.is_verified:  # a verified domain stays verified; its records show what broke
                domain.status = Domain.Status.FAILED
            domain.check_attempts += 1
            domain.dns_check = [record.stored() for record in records]
            delay = RECHECK_DELAYS[min(domain.check_attempts - 1, len(RECHECK_DELAYS) - 1)]
            domain.next_check_at = None if domain_claim_lapsed(domain, now) else now + delay
        domain.tracking_host_seen_at = (domain.tracking_host_seen_at or now) if by_key["tracking"].ok else None
        domain.save()
        partner = getattr(domain.account, "partner", None)
        checks = {key: bool(by_key[key].ok) for key in ("mx", "spf", "dkim", "dmarc")}
        if passed and first_time:
            emit(account=domain.account, name="domain.verified",
                 data={"domain": domain.name, "verified_at": iso(domain.verified_at), "checks": checks})
            if partner is not None:
                emit(account=domain.account, name="partner_domain.verified",
                     data={"domain_id": domain.pk, "domain": domain.name, "verified_at": iso(domain.verified_at),
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


def domain_claim_proven(*, domain: Domain) -> bool:
    """Before a lapsed claim gives way to another account: its DNS looked up once more, and a claim
    whose records prove ownership now verifies and is kept."""
    records = check_records(domain)
    if not _passed(records):
        return False
    try:
        return domain_verify(domain=domain, records=records).is_verified
    except DomainClaimGone:
        return False


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
            try:
                domain_verify(domain=domain)
            except DomainClaimGone:  # taken over while it was being checked
                continue
            count += 1
    return count
