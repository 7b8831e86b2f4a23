"""Throttles kept as counters in the cache. Failed logins, shared by every password login (the JSON
API's and the webmail's): per key (an address, a client IP), LOGIN_FAILURE_LIMIT failures per
LOGIN_FAILURE_WINDOW. Actions that send something to an address the caller chooses (a webhook
test, a forwarding confirmation): a number per account and hour. Past either, a clear error saying
when to try again (429 with Retry-After in the API)."""
import time

from django.conf import settings
from django.core.cache import cache

from mailcore.errors import DomainError, ErrorCode


class LoginThrottled(DomainError):
    code = ErrorCode.RATE_LIMITED

    def __init__(self, retry_after: int):
        super().__init__(f"Too many failed logins. Try again in {retry_after} seconds.", retry_after=retry_after)


def throttle_keys(realm: str, login: str, client_ip: str) -> list[str]:
    return [f"{realm}-fail:login:{login.strip().lower()}", f"{realm}-fail:ip:{client_ip}"]


def throttle_check(keys: list[str]) -> None:
    window = int(settings.LOGIN_FAILURE_WINDOW.total_seconds())
    state = cache.get_many([f"{key}:count" for key in keys] + [f"{key}:since" for key in keys])
    for key in keys:
        if state.get(f"{key}:count", 0) >= settings.LOGIN_FAILURE_LIMIT:
            since = state.get(f"{key}:since", time.time())
            raise LoginThrottled(max(1, int(since + window - time.time())))


def throttle_count_failure(keys: list[str]) -> None:
    window = int(settings.LOGIN_FAILURE_WINDOW.total_seconds())
    for key in keys:
        cache.add(f"{key}:since", time.time(), window)
        if cache.add(f"{key}:count", 1, window):
            continue
        try:
            cache.incr(f"{key}:count")
        except ValueError:  # expired between add and incr
            cache.add(f"{key}:count", 1, window)


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
