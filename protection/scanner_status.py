"""Which scanners are on, as the operator's pages show it: rspamd's state (protection/rspamd.py),
kept for a short while so pages that show it on every view ask rspamd at most that often."""
from django.core.cache import cache

from protection import rspamd

CACHE_KEY = "protection:scanner-state"
CACHE_SECONDS = 30


def scanner_state(*, fresh: bool = False) -> rspamd.ScannerState:
    """The console asks fresh; the webmail footer takes an answer up to CACHE_SECONDS old."""
    if not fresh:
        cached = cache.get(CACHE_KEY)
        if cached is not None:
            return cached
    state = rspamd.state(timeout=2)
    cache.set(CACHE_KEY, state, CACHE_SECONDS)
    return state
