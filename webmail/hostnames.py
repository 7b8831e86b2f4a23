"""A partner's own webmail hostname: claimed (one per partner), checked in DNS in the background
until it is a CNAME to WEBMAIL_HOST (or resolves to the same addresses), and the one list that
Caddy's certificate ask (`tls_allowed`) and the Host routing (`hostname_partner_id`) read.

Those two readers sit on the request path, so they never look anything up in DNS and hardly ever
touch the database: the verified names are held in each process, and a generation token in the
Django cache says when that copy is stale. Every change here replaces the token (the changing
process forgets its copy at once, the others within LOCAL_SECONDS); the token also lapses after
CACHE_SECONDS, which bounds how long a partner's status change elsewhere takes to show.
"""
import logging
import re
import secrets
import time
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from mailcore.dnslookup import lookup
from mailcore.domains.hosted import autoconfig_host_domain, mta_sts_host_domain, tracking_host_domain
from mailcore.domains.names import InvalidHostname, hostname_to_ascii
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.partners.models import HostingPartner
from webmail.branding import branding_allowed
from webmail.models import WebmailHostname

log = logging.getLogger(__name__)

# Unverified: checked soon after the claim, then less and less often; a week on, checks stop (the
# name is then free for another partner to claim) until its partner presses "check now".
RECHECK_AFTER = [(timedelta(minutes=10), timedelta(minutes=1)), (timedelta(hours=1), timedelta(minutes=5)),
                 (timedelta(days=1), timedelta(minutes=30))]
RECHECK_LATER = timedelta(hours=3)
CHECK_WINDOW = timedelta(days=7)
VERIFIED_RECHECK = timedelta(hours=24)  # a verified name is looked at again once a day
TRANSIENT_RETRY = timedelta(minutes=15)  # a verified name whose DNS did not answer
MAX_CNAME_HOPS = 8
# Partners whose verified hostname is served (and gets certificates); any other status stops it.
SERVED_STATUSES = (HostingPartner.Status.TRIAL, HostingPartner.Status.ACTIVE)
CACHE_KEY = "webmail-hostnames:generation"
CACHE_SECONDS = 60
LOCAL_SECONDS = 1.0  # how long a process trusts its copy before asking the cache again


class HostnameTaken(DomainError):
    code = ErrorCode.CONFLICT


# --- names -------------------------------------------------------------------------------------


_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ASCII_NAME = re.compile(rf"(?=.{{1,253}}\Z)(?:{_LABEL}\.)+{_LABEL}")


def hostname_normalise(name: str) -> str | None:
    """The lower-case ASCII (IDNA) form without a trailing dot, or None when it is no host name.
    A name already in that form (what Caddy asks with) is recognised without the IDNA codec."""
    text = (name or "").strip().rstrip(".").lower()
    if _ASCII_NAME.fullmatch(text) and not text.rpartition(".")[2].isdigit():
        return text
    try:
        return hostname_to_ascii(text)
    except InvalidHostname:
        return None


@lru_cache(maxsize=8)
def _platform(webmail_host: str, allowed_hosts: tuple[str, ...], public_base_url: str, mail_host: str,
              relay_host: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """(the platform's own names, the suffixes a partner's name may not end in)."""
    exact = {webmail_host}
    public = (urlsplit(public_base_url).hostname or "").lower()
    for name in (*allowed_hosts, public):
        name = name.strip().lower().rstrip(".")
        if name and name != "*" and not name.startswith(".") and hostname_normalise(name) == name:
            exact.add(name)
    suffixes = {webmail_host, mail_host, relay_host, *exact}
    suffixes |= {pattern.strip().lower().lstrip(".") for pattern in allowed_hosts if pattern.startswith(".")}
    return frozenset(exact), tuple(sorted(name for name in suffixes if name))


def platform_names() -> frozenset[str]:
    """The platform's own host names that get certificates: WEBMAIL_HOST, the exact (dotted) names
    in ALLOWED_HOSTS and PUBLIC_BASE_URL's host. Never a wildcard pattern, never an IP address."""
    return _platform_settings()[0]


def _platform_settings():
    return _platform(settings.WEBMAIL_HOST, tuple(settings.ALLOWED_HOSTS), settings.PUBLIC_BASE_URL,
                     settings.MAIL_HOST, settings.RELAY_HOST)


def webmail_hostname_clean(name: str) -> str:
    """The stored form of a hostname a partner asks for, or InvalidFields on `hostname`."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidFields({"hostname": "Give the hostname, for example webmail.example.com."})
    try:
        ascii_name = hostname_to_ascii(name, noun="hostname")
    except InvalidHostname as exc:
        raise InvalidFields({"hostname": f"{str(exc)[0].upper()}{str(exc)[1:]}."}) from None
    for own in _platform_settings()[1]:
        if ascii_name == own or ascii_name.endswith(f".{own}"):
            raise InvalidFields({"hostname": f"{ascii_name} is one of our own names; use a hostname under "
                                             "your own domain, for example webmail.example.com."})
    return ascii_name


def hostname_status(row: WebmailHostname) -> str:
    """verified; pending (background checks running); paused (a week without success: checks stopped)."""
    if row.verified_at is not None:
        return "verified"
    return "pending" if row.next_check_at is not None else "paused"


def hostname_get(*, partner: HostingPartner) -> WebmailHostname | None:
    return WebmailHostname.objects.filter(partner=partner).first()


# --- claiming ----------------------------------------------------------------------------------


def _is_abandoned(row: WebmailHostname) -> bool:
    """An unverified claim whose checks stopped: another partner may take the name."""
    return row.verified_at is None and row.next_check_at is None


def webmail_hostname_claim(*, partner: HostingPartner, hostname: str) -> WebmailHostname:
    """Claim (or replace) the partner's one webmail hostname; the first DNS check is due at once.
    Claiming the name it already has changes nothing. Needs a hosting account in trial or active."""
    branding_allowed(partner)
    name = webmail_hostname_clean(hostname)
    now = timezone.now()
    with transaction.atomic():
        current = WebmailHostname.objects.select_for_update().filter(partner=partner).first()
        if current is not None and current.hostname == name:
            return current
        holder = WebmailHostname.objects.select_for_update().filter(hostname=name).first()
        if holder is not None:
            if not _is_abandoned(holder):
                raise HostnameTaken(f"{name} is already claimed by another account.")
            holder.delete()
        if current is not None:
            current.delete()
        try:
            with transaction.atomic():
                row = WebmailHostname.objects.create(partner=partner, hostname=name, pending_since=now,
                                                     next_check_at=now)
        except IntegrityError:
            raise HostnameTaken(f"{name} is already claimed by another account.") from None
        if current is not None and current.verified_at is not None:
            hostnames_changed()
    return row


def webmail_hostname_remove(*, partner: HostingPartner) -> bool:
    """Give the hostname up; its webmail and certificate requests stop at once. True if there was one."""
    with transaction.atomic():
        row = WebmailHostname.objects.select_for_update().filter(partner=partner).first()
        if row is None:
            return False
        row.delete()
        hostnames_changed()
    return True


# --- checking DNS ------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostnameCheck:
    ok: bool
    problem: str = ""
    transient: bool = False  # DNS did not answer: says nothing about the records


DEFINITE = {"no A record", "no AAAA record", "no CNAME record", "the name does not exist"}


def _addresses(name: str) -> tuple[set[str], str | None]:
    """The A and AAAA values of `name`, and the error of a look-up that did not answer (if any)."""
    found, transient = set(), None
    for rdtype in ("A", "AAAA"):
        answer = lookup(name, rdtype)
        found |= set(answer.values)
        if answer.error and answer.error not in DEFINITE:
            transient = answer.error
    return found, transient


def hostname_dns_check(name: str) -> HostnameCheck:
    """Is `name` a CNAME (or a chain of them) to WEBMAIL_HOST, or does it resolve only to
    WEBMAIL_HOST's addresses? A problem says, in words, what DNS answered instead."""
    target = settings.WEBMAIL_HOST
    again = "we try again shortly."
    current = name
    for _ in range(MAX_CNAME_HOPS):
        answer = lookup(current, "CNAME")
        if answer.values:
            current = answer.values[0].rstrip(".").lower()
            if current == target:
                return HostnameCheck(True)
            continue
        if answer.error not in DEFINITE:
            return HostnameCheck(False, f"We could not look {name} up ({answer.error}); {again}", transient=True)
        if answer.error == "the name does not exist" and current == name:
            return HostnameCheck(False, f"{name} does not exist in DNS yet: create a CNAME record for it "
                                        f"pointing to {target}.")
        break
    else:
        return HostnameCheck(False, f"{name} is a chain of more than {MAX_CNAME_HOPS} CNAME records.")
    theirs, trouble = _addresses(current)
    if trouble and not theirs:
        return HostnameCheck(False, f"We could not look {name} up ({trouble}); {again}", transient=True)
    elsewhere = f"{name} is a CNAME to {current}, not to {target}." if current != name else ""
    if not theirs:
        return HostnameCheck(False, elsewhere or f"{name} has no CNAME record: create one pointing to {target}.")
    ours, trouble = _addresses(target)
    if not ours:
        return HostnameCheck(False, f"{target} does not resolve right now ({trouble or 'no address'}); {again}",
                             transient=True)
    if theirs <= ours:
        return HostnameCheck(True)
    strangers = ", ".join(sorted(theirs - ours))
    return HostnameCheck(False, elsewhere or f"{name} points to {strangers}, not to {target}: replace that record "
                                             f"by a CNAME to {target}.")


def _next_unverified_check(row: WebmailHostname, now: datetime) -> datetime | None:
    age = now - (row.pending_since or row.created_at or now)
    if age >= CHECK_WINDOW:
        return None
    for younger_than, delay in RECHECK_AFTER:
        if age < younger_than:
            return now + delay
    return now + RECHECK_LATER


def webmail_hostname_check(*, hostname: WebmailHostname, resume: bool = False) -> WebmailHostname:
    """Look the name up now and record the outcome: verified once DNS points at us (served at once),
    unverified again only when DNS answers that it points elsewhere. `resume` restarts the week of
    background checks of a name whose checks had stopped (the partner's "check now")."""
    now = timezone.now()
    result = hostname_dns_check(hostname.hostname)
    was_verified = hostname.verified_at is not None
    if resume and not was_verified and hostname.next_check_at is None:
        hostname.pending_since = now
    hostname.last_checked_at = now
    if result.ok:
        hostname.verified_at = hostname.verified_at or now
        hostname.check_problem, hostname.pending_since = "", None
        hostname.next_check_at = now + VERIFIED_RECHECK
    elif was_verified and result.transient:
        hostname.check_problem = result.problem[:300]  # still served: DNS said nothing new
        hostname.next_check_at = now + TRANSIENT_RETRY
    else:
        if was_verified:
            hostname.verified_at, hostname.pending_since = None, now
        hostname.check_problem = result.problem[:300]
        hostname.next_check_at = _next_unverified_check(hostname, now)
        if hostname.next_check_at is None:
            hostname.check_problem = (f"{result.problem} We stopped checking after a week; press Check now "
                                      "once the record is in place.")[:300]
    updated = WebmailHostname.objects.filter(pk=hostname.pk).update(
        verified_at=hostname.verified_at, last_checked_at=now, next_check_at=hostname.next_check_at,
        check_problem=hostname.check_problem, pending_since=hostname.pending_since)
    if updated and was_verified != (hostname.verified_at is not None):
        hostnames_changed()
    return hostname


def webmail_hostnames_recheck_due(*, limit: int = 50) -> int:
    """The sweep job: check every hostname whose next check is due (claimed with a conditional
    UPDATE, so two workers never check the same one)."""
    now = timezone.now()
    due = WebmailHostname.objects.filter(next_check_at__lte=now).order_by("next_check_at")[:limit]
    count = 0
    for row in due:
        claimed = WebmailHostname.objects.filter(pk=row.pk, next_check_at=row.next_check_at).update(
            next_check_at=now + RECHECK_AFTER[0][1])
        if claimed:
            try:
                webmail_hostname_check(hostname=row)
            except Exception:
                log.exception("webmail hostname check of %s failed", row.hostname)
            count += 1
    return count


# --- what the request path reads ---------------------------------------------------------------


@dataclass(frozen=True)
class _Served:
    generation: str
    partners: dict  # hostname -> partner id
    checked_at: float  # time.monotonic() when the generation was last compared


_served = _Served("", {}, 0.0)
_served_lock = threading.Lock()


def _forget_locally() -> None:
    global _served
    _served = _Served("", {}, 0.0)


def hostnames_changed() -> None:
    """After this transaction commits: this process reloads the served names on its next request,
    every other one within LOCAL_SECONDS (the generation in the cache is replaced)."""
    def forget() -> None:
        _forget_locally()
        cache.delete(CACHE_KEY)

    transaction.on_commit(forget)


def _generation() -> str:
    generation = cache.get(CACHE_KEY)
    if generation is None:
        fresh = secrets.token_hex(8)
        generation = fresh if cache.add(CACHE_KEY, fresh, CACHE_SECONDS) else (cache.get(CACHE_KEY) or fresh)
    return generation


def served_hostnames() -> dict[str, int]:
    """Every verified hostname of a partner in trial or active, with its partner's id. The copy held
    in this process is compared with the cache's generation at most every LOCAL_SECONDS."""
    global _served
    served, now = _served, time.monotonic()
    if served.generation and now - served.checked_at < LOCAL_SECONDS:
        return served.partners
    generation = _generation()
    if served.generation == generation:
        _served = _Served(generation, served.partners, now)
        return served.partners
    with _served_lock:
        if _served.generation != generation:
            partners = dict(WebmailHostname.objects.filter(
                verified_at__isnull=False, partner__status__in=SERVED_STATUSES).values_list("hostname", "partner_id"))
            _served = _Served(generation, partners, now)
        return _served.partners


def hostname_partner_id(host: str) -> int | None:
    """The partner whose verified webmail hostname `host` is (a Host header's name, without the
    port); None for anything else, and None when it cannot be told (fail closed)."""
    name = (host or "").strip().lower().rstrip(".")
    if not name:
        return None
    try:
        if not name.isascii():
            name = hostname_normalise(name) or ""
        return served_hostnames().get(name)
    except Exception:
        log.exception("webmail hostname lookup failed for %r", host)
        return None


def tls_allowed(domain: str) -> bool:
    """May a certificate be issued for `domain`? Only for a verified webmail hostname of a partner in
    trial or active, the platform's own names, `autoconfig.<d>` / `autodiscover.<d>` of a verified
    hosted domain d (mail clients fetch their settings there), `mta-sts.<d>` (sending servers
    fetch its MTA-STS policy there) and `track.<d>` once d's tracking CNAME was seen (its tracked
    links point there): exact matches of the normalised name (no wildcard, no DNS look-up).
    Anything unexpected answers no."""
    try:
        name = hostname_normalise(domain) if isinstance(domain, str) and len(domain) <= 253 else None
        if name is None:
            return False
        return (name in platform_names() or name in served_hostnames()
                or autoconfig_host_domain(name) is not None or tracking_host_domain(name) is not None
                or mta_sts_host_domain(name) is not None)
    except Exception:
        log.exception("tls_allowed failed for %r", domain)
        return False
