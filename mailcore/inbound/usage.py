"""How full a mailbox is after a delivery, for the 90% quota warning.

The store is asked every time: the embedded store sums its own rows, and in imap mode Dovecot's
quota_clone plugin has copied the mailbox's usage into the dovecot_quota table before its LMTP
reply (one query; an IMAP login as the mailbox, the only other way to learn it, cost Dovecot
more than the delivery itself). Usage added by IMAP clients is therefore counted too.
"""
from collections.abc import Callable

WARNING_PERCENT = 90


def usage_after(size: int, *, read: Callable[[], int]) -> tuple[int, int]:
    """(bytes used before, bytes used after) a delivery of `size` bytes; `read` asks the store."""
    after = read()
    return max(after - size, 0), after
