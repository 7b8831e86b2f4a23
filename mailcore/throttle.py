"""Throttles kept as counters in the cache. Failed logins, shared by every sign-in path of one kind
of login (mailbox owners: webmail, DAV, password change; account users: the JSON API's and the
portal's): per login name, LOGIN_FAILURE_LIMIT failures per LOGIN_FAILURE_WINDOW;
per client (its IPv4 address or IPv6 /64) a separate, much higher LOGIN_FAILURE_IP_LIMIT per LOGIN_FAILURE_IP_WINDOW, so one
wrong phone behind an office's NAT locks out its own address, not the office. Actions that send
something to an address the caller chooses (a webhook test, a forwarding confirmation): a number per
account and hour. Past either, a clear error saying when to try again (429 with Retry-After in the
API)."""
import math
import ipaddress
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from mailcore.errors import DomainError, ErrorCode


class LoginThrottled(DomainError):
    code = ErrorCode.RATE_LIMITED

    def __init__(self, retry_after: int):
        super().__init__(f"Too many failed logins. Try again in {retry_after} seconds.", retry_after=retry_after)


@dataclass(frozen=True)
class FailureCounter:
    """One count of failed logins: its cache key, how many it allows and over how long (seconds)."""

    key: str
    limit: int
    window: int


# Sign-in paths of one kind of login share one count per login name (and per client IP): a
# mailbox's address gets LOGIN_FAILURE_LIMIT guesses across webmail, DAV and the password change
# together; an account's email across POST /auth/login and the portal's sign-in together.
MAILBOX_LOGIN = "mailbox"
ACCOUNT_LOGIN = "account"


def client_network(client_ip: str) -> str:
    """What one client is for the per-IP count: its IPv4 address, or its IPv6 /64 (one host gets a
    whole /64, so counting single IPv6 addresses would let it walk around the limit)."""
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return client_ip
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def throttle_keys(realm: str, login: str, client_ip: str) -> list[FailureCounter]:
    """The counters a login attempt is held to: its login name's and its client network's."""
    client_ip = client_network(client_ip)
    return [
        FailureCounter(f"{realm}-fail:login:{login.strip().lower()}", settings.LOGIN_FAILURE_LIMIT,
                       int(settings.LOGIN_FAILURE_WINDOW.total_seconds())),
        FailureCounter(f"{realm}-fail:ip:{client_ip}", settings.LOGIN_FAILURE_IP_LIMIT,
                       int(settings.LOGIN_FAILURE_IP_WINDOW.total_seconds())),
    ]


def _incr(counter: FailureCounter, delta: int) -> int:
    cache.add(f"{counter.key}:since", time.time(), counter.window)
    if delta > 0 and cache.add(f"{counter.key}:count", delta, counter.window):
        return delta
    try:
        return cache.incr(f"{counter.key}:count", delta)
    except ValueError:  # expired since: nothing left to count from
        if delta > 0:
            cache.add(f"{counter.key}:count", delta, counter.window)
        return max(delta, 0)


def throttle_attempt(counters: list[FailureCounter]) -> None:
    """Count this attempt as a failure before its password is checked (one atomic increment per
    counter), so parallel requests cannot each get a guess past the limit; raise LoginThrottled
    when that goes over a limit (the attempt is then not counted). A right password calls
    throttle_forgive: under the limit it is never refused."""
    counts = [(counter, _incr(counter, 1)) for counter in counters]
    over = [counter for counter, count in counts if count > counter.limit]
    if not over:
        return
    for counter in counters:
        _incr(counter, -1)
    since = cache.get_many([f"{counter.key}:since" for counter in over])
    raise LoginThrottled(max(1, max(math.ceil(since.get(f"{counter.key}:since", time.time()) + counter.window
                                              - time.time()) for counter in over)))


def throttle_forgive(counters: list[FailureCounter]) -> None:
    """The attempt counted by throttle_attempt was right: take it back."""
    for counter in counters:
        _incr(counter, -1)


class ActionThrottled(DomainError):
    code = ErrorCode.RATE_LIMITED


def action_count(key: str, *, limit: int, what: str, window: int = 3600) -> None:
    """Count one action under `key` (its account's), or refuse it once `limit` were counted in the
    window that began with the first of them."""
    cache.add(f"action:{key}:since", time.time(), window)
    if cache.add(f"action:{key}:count", 1, window):
        return
    try:
        count = cache.incr(f"action:{key}:count")
    except ValueError:  # expired between add and incr
        cache.add(f"action:{key}:count", 1, window)
        return
    if count > limit:
        since = cache.get(f"action:{key}:since", time.time())
        retry_after = max(1, int(since + window - time.time()))
        raise ActionThrottled(f"At most {limit} {what} an hour. Try again in {retry_after} seconds.",
                              retry_after=retry_after)
