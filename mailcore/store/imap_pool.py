"""The `imap` store's connections: master-user login, a per-process pool reused while healthy, session limits."""
from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress

from django.conf import settings
from django.core.cache import cache
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientError

from mailcore.store.base import StoreBusy


def managed_mailbox_login(address: str) -> str:
    """The login that opens a managed mailbox with Dovecot's master user."""
    return f"{address}*{settings.DOVECOT_MASTER_USER}"


# The pool: idle logged-in connections of this process, by login. A connection idle longer than
# POOL_CHECK_SECONDS answers a NOOP before it is reused; one idle longer than POOL_IDLE_SECONDS is
# logged out. At most POOL_PER_LOGIN idle connections per login (a gthread worker's concurrent
# requests for one mailbox) and POOL_MAX in all, the least recently used going first.
POOL_CHECK_SECONDS = 30
POOL_IDLE_SECONDS = 300
POOL_PER_LOGIN = 4
POOL_MAX = 32


def _logout(client: IMAPClient) -> None:
    try:
        client.logout()
    except (IMAPClientError, OSError):
        with suppress(OSError):
            client.shutdown()


def _unselected(client: IMAPClient) -> bool:
    """A connection goes back to the pool with no folder selected: a folder deleted meanwhile
    (Dovecot then ends every session that has it selected) cannot end it."""
    if client._imap.state != "SELECTED":  # imaplib's connection state
        return True
    try:
        client.unselect_folder()
        return True
    except (IMAPClientError, OSError):
        return False


def _alive(client: IMAPClient, idle: float) -> bool:
    """Not closed by the server (it says BYE before closing, which makes the socket readable)."""
    try:
        if select.select([client.socket()], [], [], 0)[0]:
            return False
        if idle > POOL_CHECK_SECONDS:
            client.noop()
        return True
    except (IMAPClientError, OSError, ValueError):
        return False


@contextmanager
def _session_slot(key: str | None) -> Iterator[None]:
    """One of the CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT sessions counted under `key` (shared by
    every process through the cache, forgotten after a few session lifetimes should a process die
    holding one); StoreBusy with Retry-After when all are taken."""
    if key is None:
        yield
        return
    seconds = settings.CONNECTED_MAILBOX_SESSION_SECONDS
    cache.add(key, 0, timeout=seconds * 3)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=seconds * 3)
        count = 1
    if count > settings.CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT:
        _session_end(key)
        raise StoreBusy(f"At most {settings.CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT} reads of connected mailboxes "
                        "at once per account; the provider is slow to answer.",
                        retry_after=seconds)
    try:
        yield
    finally:
        _session_end(key)


def _session_end(key: str) -> None:
    with suppress(ValueError):  # the count expired meanwhile
        cache.decr(key)


class _Pool:
    """Thread-safe; a connection taken out is its taker's alone until it is given back."""

    def __init__(self):
        self._lock = threading.Lock()
        self._idle: list[tuple[tuple, IMAPClient, float]] = []  # (key, client, idle since), oldest first
        self._pid = os.getpid()

    def take(self, key: tuple) -> IMAPClient | None:
        while True:
            with self._lock:
                stale = self._prune()
                found = next((entry for entry in reversed(self._idle) if entry[0] == key), None)
                if found is not None:
                    self._idle.remove(found)
            for _key, client, _since in stale:
                _logout(client)
            if found is None:
                return None
            if _alive(found[1], time.monotonic() - found[2]):
                return found[1]
            _logout(found[1])

    def give(self, key: tuple, client: IMAPClient) -> None:
        with self._lock:
            self._idle.append((key, client, time.monotonic()))
            stale = self._prune()
            for entry in [entry for entry in self._idle if entry[0] == key][:-POOL_PER_LOGIN]:
                self._idle.remove(entry)
                stale.append(entry)
            excess = len(self._idle) - POOL_MAX
            if excess > 0:
                stale += self._idle[:excess]
                del self._idle[:excess]
        for _key, old, _since in stale:
            _logout(old)

    def _prune(self) -> list:
        """Forget a parent's connections after a fork; hand back those idle too long."""
        if os.getpid() != self._pid:
            self._idle, self._pid = [], os.getpid()
        limit = time.monotonic() - POOL_IDLE_SECONDS
        stale = [entry for entry in self._idle if entry[2] < limit]
        self._idle = [entry for entry in self._idle if entry[2] >= limit]
        return stale


_POOL = _Pool()


class _Alongside:
    """A few threads of this process for store reads that run beside a request's own IMAP commands,
    each on a connection of its own from the pool. Made anew after a fork: threads are not inherited."""

    def __init__(self):
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = None

    def submit(self, work: Callable):
        with self._lock:
            if self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(max_workers=POOL_PER_LOGIN, thread_name_prefix="imap-alongside")
                self._pid = os.getpid()
            return self._executor.submit(work)


_ALONGSIDE = _Alongside()
