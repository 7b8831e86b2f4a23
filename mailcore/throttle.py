"""Throttles kept as counters in the cache. Failed logins, shared by every password login (the JSON
API's, the webmail's and DAV's): per address, LOGIN_FAILURE_LIMIT failures per LOGIN_FAILURE_WINDOW;
per client IP a separate, much higher LOGIN_FAILURE_IP_LIMIT per LOGIN_FAILURE_IP_WINDOW, so one
wrong phone behind an office's NAT locks out its own address, not the office. Actions that send
something to an address the caller chooses (a webhook test, a forwarding confirmation): a number per
account and hour. Past either, a clear error saying when to try again (429 with Retry-After in the
API)."""
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


def throttle_keys(realm: str, login: str, client_ip: str) -> list[FailureCounter]:
    """The counters a login attempt is held to: its login name's and its client IP's."""
    return [
        FailureCounter(f"{realm}-fail:login:{login.strip().lower()}", settings.LOGIN_FAILURE_LIMIT,
                       int(settings.LOGIN_FAILURE_WINDOW.total_seconds())),
        FailureCounter(f"{realm}-fail:ip:{client_ip}", settings.LOGIN_FAILURE_IP_LIMIT,
                       int(settings.LOGIN_FAILURE_IP_WINDOW.total_seconds())),
    ]


def throttle_check(counters: list[FailureCounter]) -> None:
    state = cache.get_many([f"{c.key}:count" for c in counters] + [f"{c.key}:since" for c in counters])
    for counter in counters:
        if state.get(f"{counter.key}:count", 0) >= counter.limit:
            since = state.get(f"{counter.key}:since", time.time())
            raise LoginThrottled(max(1, int(since + counter.window - time.time())))


def throttle_count_failure(counters: list[FailureCounter]) -> None:
    for counter in counters:
        cache.add(f"{counter.key}:since", time.time(), counter.window)
        if cache.add(f"{counter.key}:count", 1, counter.window):
            continue
        try:
            cache.incr(f"{counter.key}:count")
        except ValueError:  # expired between add and incr
            cache.add(f"{counter.key}:count", 1, counter.window)


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
