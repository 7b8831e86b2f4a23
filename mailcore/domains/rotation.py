"""DKIM key rotation: a domain's keys go pending (published in the wizard, waiting to be seen in DNS)
-> active (signing) -> retiring (still published a week, no longer signing) -> retired (listed as
removable for a while, then its private half is erased). Two selectors per algorithm take turns, so
the new key never replaces a record mail in flight is still checked against. Signing switches only
once DNS has the new key: nothing ever signs with a key receivers cannot look up.

A partner starts a rotation (portal, /v1/hosting), or its schedule does every N months; an Ed25519
key beside RSA (RFC 8463) goes through the same states. The sweep job (`dkim_rotation_sweep`) looks
pending keys up, retires old keys and starts scheduled rotations; every change rewrites the domain's
stored check so the wizard and the API's dns_records show what to publish at each step.
"""
import calendar
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from mailcore.domains.dkim import dkim_key_for, dkim_private_key_new
from mailcore.domains.dnscheck import (
    DnsProblem,
    DnsRecord,
    check_dkim,
    dkim_key_record,
    expected_records,
    is_dkim,
    is_removable,
    is_transitional,
)
from mailcore.domains.models import DkimKey, Domain
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.events.services import emit
from mailcore.timefmt import iso

SELECTORS = {DkimKey.Algorithm.RSA: ("dkim", "dkim2"), DkimKey.Algorithm.ED25519: ("dkimed", "dkimed2")}
KEEP_OLD_KEY = timedelta(days=7)  # mail signed just before the switch may sit in queues and inboxes for days
SHOW_REMOVABLE = timedelta(days=30)
CHECK_DELAYS = [timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1), timedelta(hours=6)]
SCHEDULE_MONTHS_MAX = 24
State = DkimKey.State
RSA, ED25519 = DkimKey.Algorithm.RSA, DkimKey.Algorithm.ED25519


class DkimRotationRunning(DomainError):
    code = ErrorCode.CONFLICT


class NoDkimRotationToCancel(DomainError):
    code = ErrorCode.CONFLICT


# starting, cancelling, settings


def dkim_rotation_start(*, domain: Domain) -> DkimKey:
    """A new RSA key under the selector not in use, pending until DNS has it; DkimRotationRunning
    while one runs (its new key not seen yet, or its old key still kept)."""
    name = domain.name.lower()
    dkim_key_for(name)  # the key it rotates away from exists
    with transaction.atomic():
        running = DkimKey.objects.select_for_update().filter(
            domain_name=name, algorithm=RSA, state__in=[State.PENDING, State.RETIRING]).first()
        if running is not None:
            raise DkimRotationRunning(_running_text(running))
        key = _key_new(domain, RSA)
        _records_refresh(domain)
    return key


def _running_text(key: DkimKey) -> str:
    if key.state == State.PENDING:
        return (f"a DKIM key rotation is already running: its new key ({key.selector}._domainkey) is waiting "
                f"to be seen in DNS; cancel it first")
    return (f"a DKIM key rotation is still running: the old key ({key.selector}._domainkey) stays published "
            f"until {iso(key.retire_after, timespec='seconds')}")


def _key_new(domain: Domain, algorithm: str) -> DkimKey:
    name = domain.name.lower()
    in_use = set(DkimKey.objects.filter(domain_name=name).exclude(state=State.RETIRED)
                 .values_list("selector", flat=True))
    selector = next((each for each in SELECTORS[algorithm] if each not in in_use), None)
    if selector is None:
        raise DkimRotationRunning(f"both {algorithm} selectors are in use; wait until the old key is retired")
    try:
        with transaction.atomic():
            return DkimKey.objects.create(domain_name=name, algorithm=algorithm, selector=selector,
                                          state=State.PENDING, private_key_pem=dkim_private_key_new(algorithm),
                                          next_check_at=timezone.now())
    except IntegrityError:  # another request started one meanwhile
        raise DkimRotationRunning("a DKIM key rotation was started meanwhile") from None


def dkim_rotation_cancel(*, domain: Domain) -> None:
    """Drop the new RSA key before signing switches to it (it never signed anything)."""
    with transaction.atomic():
        deleted, _ = DkimKey.objects.filter(domain_name=domain.name.lower(), algorithm=RSA,
                                            state=State.PENDING).delete()
        if not deleted:
            raise NoDkimRotationToCancel("no DKIM key rotation is waiting for its new key: signing has switched "
                                         "already, or none was started")
        _records_refresh(domain)


def dkim_settings_set(*, domain: Domain, rotate_every_months: int | None = None,
                      ed25519: bool | None = None) -> Domain:
    """The rotation schedule (months, 0 for never) and whether an Ed25519 key signs beside RSA:
    turned on, a new Ed25519 key waits to be seen in DNS; turned off, it stops signing at once and
    stays published a week. Values left out stay as they are."""
    if rotate_every_months is not None and not 0 <= rotate_every_months <= SCHEDULE_MONTHS_MAX:
        raise InvalidFields({"rotate_every_months": [
            f"a number of months from 1 to {SCHEDULE_MONTHS_MAX}, or 0 for no scheduled rotation"]})
    with transaction.atomic():
        domain = Domain.objects.select_for_update().get(pk=domain.pk)
        if rotate_every_months is not None:
            domain.dkim_rotate_every_months = rotate_every_months
        if ed25519 is not None and ed25519 != domain.dkim_ed25519:
            domain.dkim_ed25519 = ed25519
            if ed25519:
                _key_new(domain, ED25519)
            else:
                _ed25519_stop(domain)
        domain.save(update_fields=["dkim_rotate_every_months", "dkim_ed25519"])
        _records_refresh(domain)
    return domain


def _ed25519_stop(domain: Domain) -> None:
    keys = DkimKey.objects.filter(domain_name=domain.name.lower(), algorithm=ED25519)
    keys.filter(state=State.PENDING).delete()
    keys.filter(state=State.ACTIVE).update(state=State.RETIRING, retire_after=timezone.now() + KEEP_OLD_KEY)


# what the portal and the API show


def dkim_keys_listed(*, domain: Domain) -> list[DkimKey]:
    """The domain's keys that are published or waiting to be: newest first."""
    return list(DkimKey.objects.filter(domain_name=domain.name.lower())
                .exclude(state=State.RETIRED, shown_until__isnull=True).order_by("-algorithm", "-pk"))


@dataclass
class DkimStatus:
    """Where a domain's keys stand, as the portal and the API show it."""

    domain: Domain
    keys: list[DkimKey] = field(default_factory=list)  # each with .host and .value of its record
    rotation: str = "none"  # "none", "waiting_for_dns" (cancel allowed) or "keeping_old_key"
    running: DkimKey | None = None  # the new key waiting, or the old key kept
    next_rotation_at: datetime | None = None

    @property
    def signing(self) -> list[DkimKey]:
        return [key for key in self.keys if key.state == State.ACTIVE]


def dkim_status(*, domain: Domain) -> DkimStatus:
    dkim_key_for(domain.name)
    keys = dkim_keys_listed(domain=domain)
    for key in keys:
        record = dkim_key_record(key)
        key.host, key.value = record.host, record.value
    running = dkim_rotation_running(keys)
    rotation = {None: "none", State.PENDING: "waiting_for_dns", State.RETIRING: "keeping_old_key"}[
        running.state if running else None]
    return DkimStatus(domain, keys, rotation, running, dkim_next_rotation_at(domain=domain, keys=keys))


def dkim_rotation_running(keys: list[DkimKey]) -> DkimKey | None:
    """The RSA key of a rotation under way (its new key pending, or its old key retiring), if any."""
    return next((key for key in keys if key.algorithm == RSA and key.state in (State.PENDING, State.RETIRING)),
                None)


def dkim_next_rotation_at(*, domain: Domain, keys: list[DkimKey] | None = None) -> datetime | None:
    """When the schedule starts the next rotation: N months after the signing RSA key started signing."""
    if not domain.dkim_rotate_every_months:
        return None
    keys = keys if keys is not None else dkim_keys_listed(domain=domain)
    active = next((key for key in keys if key.algorithm == RSA and key.state == State.ACTIVE), None)
    if active is None or active.activated_at is None:
        return None
    return months_later(active.activated_at, domain.dkim_rotate_every_months)


def months_later(moment: datetime, months: int) -> datetime:
    """The same day and time `months` later (the month's last day when it is shorter)."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


# seeing keys in DNS and switching


def dkim_keys_seen(*, domain: Domain, records: list[DnsRecord]) -> list[DnsRecord]:
    """After a DNS check (Check DNS, verify): pending keys whose record it found start signing; the
    records as they are now, with what the check found."""
    found = {(record.host, record.value) for record in records
             if record.ok and is_dkim(record) and record.key.endswith("_next")}
    pending = DkimKey.objects.filter(domain_name=domain.name.lower(), state=State.PENDING)
    switched = [key for key in pending if (f"{key.selector}._domainkey", dkim_key_record(key).value) in found]
    for key in switched:
        _switch(domain, key, records)
    return _merged(domain, records) if switched else records


def _switch(domain: Domain, key: DkimKey, checked: list[DnsRecord]) -> bool:
    """The pending key signs from now on; the old one of its algorithm is kept a week. Emits
    domain.dkim_rotated when a key replaced another."""
    now = timezone.now()
    with transaction.atomic():
        key = DkimKey.objects.select_for_update().filter(pk=key.pk, state=State.PENDING).first()
        if key is None:  # cancelled, or switched by another check meanwhile
            return False
        old = DkimKey.objects.select_for_update().filter(domain_name=key.domain_name, algorithm=key.algorithm,
                                                         state=State.ACTIVE).first()
        if old is not None:
            old.state, old.retire_after = State.RETIRING, now + KEEP_OLD_KEY
            old.save(update_fields=["state", "retire_after"])
        key.state, key.activated_at, key.next_check_at = State.ACTIVE, now, None
        key.save(update_fields=["state", "activated_at", "next_check_at"])
        domain = Domain.objects.select_related("account").get(pk=domain.pk)
        _records_refresh(domain, checked)
        if old is not None:
            emit(account=domain.account, name="domain.dkim_rotated", data={
                "domain": domain.name, "algorithm": key.algorithm, "selector": key.selector,
                "previous_selector": old.selector, "switched_at": iso(now),
                "previous_published_until": iso(old.retire_after)})
    return True


# the stored check the wizard and the API read


def _merged(domain: Domain, checked: list[DnsRecord] = ()) -> list[DnsRecord]:
    """The records to publish now, each with the latest status known for its host and value: a check
    just made, else the stored one; a verified domain stored with every record right keeps them right."""
    all_right = domain.is_verified and domain.dns_check == []
    known = {(row["host"], row["value"]): row for row in domain.dns_check or []}
    known |= {(record.host, record.value): record.stored() for record in checked}
    records = expected_records(domain)
    for record in records:
        row = known.get((record.host, record.value))
        if row is not None and row.get("ok") is not None:
            record.ok, record.found_value, record.reason = row["ok"], row.get("found_value"), row.get("reason")
            record.problem = DnsProblem(row["problem"]) if row.get("problem") else None
        elif is_removable(record) or (all_right and not is_transitional(record)):
            record.ok = True
    return records


def dkim_records_stored(records: list[DnsRecord]) -> list[dict]:
    """A check as the domain stores it: [] when every record is right and no rotation asks for
    anything (dns_records is null then), else every record."""
    if all(record.ok for record in records if not record.optional) and not any(map(is_transitional, records)):
        return []
    return [record.stored() for record in records]


def _records_refresh(domain: Domain, checked: list[DnsRecord] = ()) -> None:
    if domain.dns_check is None and not domain.is_verified and not checked:
        records = expected_records(domain)  # never checked: what to create, unchecked
        domain.dns_check = [record.stored() for record in records]
    else:
        records = _merged(domain, checked)
        domain.dns_check = dkim_records_stored(records) if domain.is_verified else [r.stored() for r in records]
    Domain.objects.filter(pk=domain.pk).update(dns_check=domain.dns_check)


# the background job


def dkim_rotation_sweep(*, limit: int = 50) -> int:
    """Look pending keys up in DNS (switching those found), retire keys kept their week, forget
    retired ones, and start the rotations schedules ask for; returns how many keys changed."""
    return _pending_check(limit) + _retire_due() + _forget_due() + _scheduled_start(limit)


def _domains_by_name(names) -> dict[str, Domain]:
    return {domain.name: domain for domain in Domain.objects.filter(name__in=set(names)).select_related("account")}


def _pending_check(limit: int) -> int:
    now = timezone.now()
    due = list(DkimKey.objects.filter(state=State.PENDING, next_check_at__lte=now).order_by("next_check_at")[:limit])
    domains = _domains_by_name(key.domain_name for key in due)
    switched = 0
    for key in due:
        domain = domains.get(key.domain_name)
        if domain is None:  # its domain was deleted: nothing will ever publish it
            key.delete()
            continue
        record = dkim_key_record(key)
        check_dkim(record, domain)
        if record.ok:
            switched += _switch(domain, key, [record])
            continue
        with transaction.atomic():  # the wizard shows what the look-up found
            if DkimKey.objects.filter(pk=key.pk, state=State.PENDING).update(
                    next_check_at=now + _check_delay(now - key.created_at)):
                _records_refresh(domain, [record])
    return switched


def _check_delay(waited: timedelta) -> timedelta:
    """Often at first (partners publish right after starting), then less and less."""
    return next((delay for delay in CHECK_DELAYS if waited < delay * 12), CHECK_DELAYS[-1])


def _retire_due() -> int:
    now = timezone.now()
    due = list(DkimKey.objects.filter(state=State.RETIRING, retire_after__lte=now))
    retired = DkimKey.objects.filter(pk__in=[key.pk for key in due], state=State.RETIRING).update(
        state=State.RETIRED, retired_at=now, shown_until=now + SHOW_REMOVABLE)
    _refresh_names(key.domain_name for key in due)
    return retired


def _forget_due() -> int:
    due = list(DkimKey.objects.filter(state=State.RETIRED, shown_until__lte=timezone.now()))
    forgotten = DkimKey.objects.filter(pk__in=[key.pk for key in due]).update(shown_until=None, private_key_pem="")
    _refresh_names(key.domain_name for key in due)
    return forgotten


def _refresh_names(names) -> None:
    for domain in _domains_by_name(names).values():
        _records_refresh(domain)


def _scheduled_start(limit: int) -> int:
    now = timezone.now()
    scheduled = list(Domain.objects.filter(dkim_rotate_every_months__gt=0))
    keys: dict[str, list[DkimKey]] = {}
    for key in DkimKey.objects.filter(domain_name__in=[domain.name for domain in scheduled]).exclude(
            state=State.RETIRED).defer("private_key_pem"):
        keys.setdefault(key.domain_name, []).append(key)
    started = 0
    for domain in scheduled:
        own = keys.get(domain.name, [])
        due = dkim_next_rotation_at(domain=domain, keys=own)
        if due is None or due > now or dkim_rotation_running(own) is not None:
            continue
        try:
            dkim_rotation_start(domain=domain)
        except DkimRotationRunning:  # started by its partner meanwhile
            continue
        started += 1
        if started >= limit:
            break
    return started

