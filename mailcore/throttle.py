"""Failed-login throttling shared by every password login (the JSON API's and the webmail's):
counters per key (an address, a client IP) in the cache, LOGIN_FAILURE_LIMIT failures per
LOGIN_FAILURE_WINDOW, then a clear error saying when to try again."""
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
