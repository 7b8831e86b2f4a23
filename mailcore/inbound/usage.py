"""How full a mailbox is after a delivery, for the 90% quota warning.

Dovecot tells a mailbox's usage only to an IMAP login as that mailbox (a new imap process), which
would cost more than the delivery itself. So in imap mode the listener remembers the usage it last
read per mailbox and adds what it delivered since; it reads the store again when that estimate
comes within MARGIN_PERCENT of the warning line or is older than FRESH_SECONDS. The message that
crosses the line is therefore always measured, unless mail stored by other ways (IMAP clients,
another listener) added more than the margin within those seconds. The embedded store's usage
is a query on our own rows: it is read every time.
"""
import threading
import time
from collections.abc import Callable

from django.conf import settings

from mailcore.mailboxes.models import Mailbox

WARNING_PERCENT = 90
MARGIN_PERCENT = 10
FRESH_SECONDS = 10

_known: dict[str, tuple[float, int]] = {}  # address -> (when read, bytes used by then plus our deliveries since)
_lock = threading.Lock()


def usage_after(mailbox: Mailbox, size: int, *, limit: int, read: Callable[[], int]) -> tuple[int, int]:
    """(bytes used before, bytes used after) this delivery of `size` bytes; `read` asks the store."""
    if settings.MAIL_STORE != "imap":
        after = read()
        return max(after - size, 0), after
    with _lock:
        known = _known.get(mailbox.address)
        if known and _far_below(known, size, limit):
            _known[mailbox.address] = (known[0], known[1] + size)
            return known[1], known[1] + size
    asked = time.monotonic()
    after = read()
    with _lock:
        _known[mailbox.address] = (asked, after)
    return max(after - size, 0), after


def _far_below(known: tuple[float, int], size: int, limit: int) -> bool:
    read_at, used = known
    return (time.monotonic() - read_at < FRESH_SECONDS
            and (used + size) * 100 <= limit * (WARNING_PERCENT - MARGIN_PERCENT))
