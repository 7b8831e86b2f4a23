"""The `imap` mail store: one mailbox on an IMAP server (Dovecot through the master user, or the
provider of a connected mailbox), reached with imapclient.

A managed mailbox's operations reuse a logged-in connection from a small per-process pool (one
login serves many requests, as a mail client keeps its connection); writes that add mail (append,
move) and connected mailboxes (another provider's connection limits) open their own and log out.
Folder names and UIDs are checked before they reach an IMAP command; server answers become the
store's exceptions.
"""
from __future__ import annotations

import os
import re
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from datetime import UTC, datetime
from email.errors import HeaderParseError
from email.header import decode_header, make_header

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError
from imapclient.datetime_util import parse_to_datetime
from imapclient.imap_utf7 import decode as decode_utf7
from imapclient.response_parser import parse_fetch_response, parse_response
from imapclient.response_types import Address, BodyData, Envelope
from imapclient.util import chunk

from mailcore.paging import page_window
from mailcore.netsafety import Deadline
from mailcore.remotemail import ProviderError, ResponseTooLarge, imap_open
from mailcore.store.base import (
    DEFAULT_FOLDERS,
    FLAGGED,
    HAS_ATTACHMENT,
    SEEN,
    SERVER_KEYWORDS,
    Criteria,
    Delivered,
    DeliveryRefused,
    Folder,
    FolderNotFound,
    MessageNotFound,
    MessagePage,
    MessageSummary,
    QuotaExceeded,
    StoredMessage,
    StoreError,
    StoreBusy,
    StoreUnavailable,
    trace_headers,
    validate_folder,
    validate_keyword,
    validate_new_folder,
    validate_sort,
    validate_uid,
    with_headers,
)
from mailcore.store.lmtp import lmtp_deliver_many

SPECIAL_USES = {"\\All", "\\Archive", "\\Drafts", "\\Flagged", "\\Junk", "\\Sent", "\\Trash"}
SUMMARY_FIELDS = [b"ENVELOPE", b"FLAGS", b"RFC822.SIZE", b"BODYSTRUCTURE", b"INTERNALDATE"]
# An IMAP atom usable as a keyword (RFC 3501 flag-keyword): no spaces, specials or controls.
_COPYUID = re.compile(rb"COPYUID \d+ [\d:,]+ (\d+)")
_APPENDUID = re.compile(rb"APPENDUID \d+ (\d+)")


def managed_mailbox_login(address: str) -> str:
    """The login that opens a managed mailbox with Dovecot's master user."""
    return f"{address}*{settings.DOVECOT_MASTER_USER}"


def _text(value: bytes | str | None) -> str:
    """A header value from ENVELOPE: encoded words decoded, whitespace collapsed, no NUL (as
    mailcore.store.reading gives it)."""
    if value is None:
        return ""
    raw = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
    if "=?" not in raw:  # no encoded words: decoding would give the same text back
        return " ".join(raw.split())
    try:
        decoded = str(make_header(decode_header(raw)))
    except (ValueError, LookupError, UnicodeError, HeaderParseError):  # bad base64 in an encoded word, say
        decoded = raw
    return " ".join(decoded.replace("\x00", "").split())


def _address(address: Address) -> str | None:
    if not address.mailbox or not address.host:
        return None  # the start or end of an address group
    email = f"{_text(address.mailbox)}@{_text(address.host)}"
    name = _text(address.name)
    return f"{name} <{email}>" if name else email


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _flags(values: Sequence[bytes]) -> tuple[str, ...]:
    flags = (value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value for value in values)
    return tuple(flag for flag in flags if flag != "\\Recent" and flag not in SERVER_KEYWORDS)


def _param(params: object, name: bytes) -> bytes | None:
    """A parameter of a BODYSTRUCTURE (name value ...) list; `filename*` (RFC 2231) counts too."""
    if not isinstance(params, tuple):
        return None
    pairs = zip(params[::2], params[1::2], strict=False)
    return next((value for key, value in pairs if isinstance(key, bytes) and key.lower().split(b"*")[0] == name), None)


def _is_attachment(part: tuple) -> bool:
    """One leaf of BODYSTRUCTURE, judged like mailcore.store.reading: an attachment is a part
    with disposition `attachment`, or a named part that is neither inline nor the text itself."""
    content_type = f"{_text(part[0])}/{_text(part[1])}".lower()
    # The 7 basic fields, the line count of text/* or envelope+body+lines of message/rfc822,
    # then the MD5, then the disposition.
    extra = 1 if content_type.startswith("text/") else 3 if content_type == "message/rfc822" else 0
    position = 7 + extra + 1
    disposition = part[position] if len(part) > position and isinstance(part[position], tuple) else None
    kind = _text(disposition[0]).lower() if disposition else ""
    filename = _param(disposition[1] if disposition and len(disposition) > 1 else None, b"filename")
    filename = filename or _param(part[2], b"name")
    named_file = bool(filename) and kind != "inline" and content_type not in {"text/plain", "text/html"}
    return kind == "attachment" or named_file


def _has_attachments(body: BodyData) -> bool:
    if body.is_multipart:
        return any(_has_attachments(part) for part in body[0])
    return _is_attachment(tuple(body))


# A list's FETCH answer read with one regular expression per line instead of imapclient's
# character-by-character lexer (most of a page's time), giving the values imapclient gives: NIL,
# numbers, quoted strings (\\ and \" escapes), literals, atoms with [sections]. A token is told by
# its first byte; anything else (a lone byte no other form takes) leaves the answer to imapclient's
# own parser. Each form is written as a run of its characters, not one character per step: the
# expression was half of the reading.
_FETCH_TOKEN = re.compile(
    rb'[ \t\r\n]*("[^"\\]*(?:\\.[^"\\]*)*"|[()]|(?:[^\x00-\x20()%"\[]+|\[[^\]]*\])+|.)', re.DOTALL)
_WORD_START = re.compile(rb'[^\x00-\x20()%"\[]|\[.', re.DOTALL)  # a lone [ is no word
_QUOTED_ESCAPE = re.compile(rb'\\([\\"])')
_OPEN, _CLOSE, _QUOTE = b"()\""  # ints, as indexing bytes gives them


class _Unparsed(Exception):
    """The answer holds something the fast reader leaves to imapclient."""


def _word(word: bytes, literal: bytes | None):
    if word == b"NIL":
        return None
    if word[:1] == b"{":
        if literal is None or word != b"{%d}" % len(literal):
            raise _Unparsed
        return literal
    if word.isdigit() and (word[:1] != b"0" or len(word) == 1):
        return int(word)
    return word


def _atoms(records: list) -> list:
    """imaplib's untagged records (a line, or a line ending in {n} with its literal) as nested tuples."""
    stack: list[list] = []  # the lists still open around `current`
    current: list = []
    append = current.append
    for record in records:
        text, literal = record if isinstance(record, tuple) else (record, None)
        for token in _FETCH_TOKEN.findall(text):
            first = token[0]
            if first == _QUOTE and len(token) > 1:  # a whole quoted string (a lone " is no token)
                value = token[1:-1]
                append(_QUOTED_ESCAPE.sub(rb"\1", value) if b"\\" in value else value)
            elif first == _OPEN:
                stack.append(current)
                current = []
                append = current.append
            elif first == _CLOSE:
                if not stack:
                    raise _Unparsed
                done = tuple(current)
                current = stack.pop()
                append = current.append
                append(done)
            elif _WORD_START.match(token):
                append(_word(token, literal))
            else:
                raise _Unparsed
    if stack:
        raise _Unparsed
    return current


def _date(value) -> datetime | None:
    """As imapclient reads ENVELOPE and INTERNALDATE dates (server time zones kept)."""
    try:
        return parse_to_datetime(value, normalise=False) if value else None
    except ValueError:
        return None


def _addresses(value) -> tuple[Address, ...] | None:
    return tuple(Address(*address) for address in value if address) if value else None


def _envelope(value: tuple) -> Envelope:
    return Envelope(_date(value[0]), value[1], *(_addresses(part) for part in value[2:8]),
                    in_reply_to=value[8], message_id=value[9])


_CONVERT = {b"UID": int, b"INTERNALDATE": _date, b"ENVELOPE": _envelope, b"BODYSTRUCTURE": BodyData.create}


def _fetched(records: list, *, by_uid: bool) -> dict[int, dict]:
    """A FETCH answer as {UID or sequence number: {item: value}}, typed and keyed as imapclient's
    parse_fetch_response gives it (UID among the items when keyed by sequence number)."""
    if records == [None]:
        return {}
    try:
        atoms = _atoms(records)
        found: dict[int, dict] = {}
        for number, items in zip(atoms[::2], atoms[1::2], strict=True):
            values = {name.upper(): value for name, value in zip(items[::2], items[1::2], strict=True)}
            values = {name: _CONVERT[name](value) if name in _CONVERT else value for name, value in values.items()}
            found.setdefault(values.get(b"UID", int(number)) if by_uid else int(number), {}).update(values)
        return found
    except (_Unparsed, ValueError, TypeError, IndexError, AttributeError):
        return parse_fetch_response(records, False, by_uid)


def _fetch_summaries(client: IMAPClient, ids: list[int], *, by_uid: bool) -> dict[int, dict]:
    """FETCH the list's items as IMAPClient.fetch sends it, read by _fetched instead of imapclient."""
    imap = client._imap  # noqa: SLF001 - imaplib's connection: the answer before imapclient parses it
    command = ["UID"] if by_uid else []
    tag = imap._command(*command, "FETCH", ",".join(map(str, ids)),  # noqa: SLF001
                        "(" + " ".join(item.decode() for item in [b"UID", *SUMMARY_FIELDS]) + ")")
    typ, data = imap._command_complete("FETCH", tag)  # noqa: SLF001
    if typ != "OK":
        raise IMAPClientError(f"fetch failed: {data[0]!r}")
    return _fetched(imap._untagged_response(typ, data, "FETCH")[1], by_uid=by_uid)  # noqa: SLF001


# A <msg-id> safe to send as a quoted IMAP search string.
_SAFE_ID = re.compile(r"<[!-;=?-~]{1,500}>")


def _search_keys(criteria: Criteria, *, starred_only: bool = False, unseen_only: bool = False,
                 keyword: str | None = None) -> tuple[list, str | None]:
    """IMAP SEARCH keys for the criteria (all must hold) and the charset their text needs."""
    keys: list = []
    texts = []
    for name, value in (("TEXT", criteria.text), ("FROM", criteria.from_), ("SUBJECT", criteria.subject),
                        ("BODY", criteria.body)):
        for word in value.split():
            keys += [name, word]
            texts.append(word)
    for word in criteria.to.split():
        keys.append(["OR", ["TO", word], ["CC", word]])
        texts.append(word)
    if criteria.since:
        keys += ["SINCE", criteria.since]
    if criteria.before:
        keys += ["BEFORE", criteria.before]
    if criteria.has_attachment:
        # Dovecot marks attachments at save; another server is asked for multipart/mixed.
        keys.append(["OR", ["KEYWORD", HAS_ATTACHMENT],
                     ["HEADER", "Content-Type", "multipart/mixed", "UNKEYWORD", "$HasNoAttachment"]])
    if criteria.unseen or unseen_only:
        keys.append("UNSEEN")
    if criteria.starred or starred_only:
        keys.append("FLAGGED")
    for word in {criteria.keyword, keyword} - {None}:
        keys += ["KEYWORD", validate_keyword(word)]
    if any(any(char in "\r\n\0" for char in text) for text in texts):
        raise StoreError("search words cannot contain line breaks")
    charset = None if all(text.isascii() for text in texts) else "UTF-8"
    return keys or ["ALL"], charset


def _error(exc: IMAPClientError, folder: str | None = None) -> StoreError:
    """Map a refused command to the store's exceptions through the server's response code."""
    text = str(exc)
    if "[OVERQUOTA]" in text or "quota exceeded" in text.lower():
        return QuotaExceeded("the mailbox is over its storage quota")
    if folder is not None and ("[NONEXISTENT]" in text or "[TRYCREATE]" in text or "doesn't exist" in text):
        return FolderNotFound(f"folder {folder!r} does not exist")
    return StoreError(f"the mail server refused: {text}")


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


class ImapStore:
    def __init__(self, host: str, port: int, username: str, password: str, tls: bool, timeout: float, *,
                 pooled: bool = False, usage_clone: str | None = None, remote: bool = False,
                 sessions_key: str | None = None, max_literal: int | None = None):
        """usage_clone: the address our Dovecot copies this mailbox's usage under (dovecot_quota);
        None for a mailbox at another provider. remote: a server the caller named (a connected
        mailbox's provider), reached only at a checked public address (mailcore.remotemail), whose
        words on connecting are not repeated. sessions_key: counts the sessions open under it
        (its account's), at most CONNECTED_MAILBOX_SESSIONS_PER_ACCOUNT at once. max_literal: the
        longest message or part read from the server."""
        self.host, self.port, self.tls, self.timeout = host, port, tls, timeout
        self.username, self.password = username, password
        self.pooled = pooled
        self.usage_clone = usage_clone
        self.remote = remote
        self.sessions_key, self.max_literal = sessions_key, max_literal

    def __repr__(self) -> str:
        return f"ImapStore({self.username!r} at {self.host}:{self.port})"

    def _connect(self, deadline: Deadline | None = None) -> IMAPClient:
        if self.remote:
            try:
                client = imap_open(self.host, self.port, self.tls, self.username, self.password,
                                   connect_timeout=settings.CONNECTED_MAILBOX_CHECK_SECONDS, read_timeout=self.timeout,
                                   deadline=deadline, max_literal=self.max_literal)
            except ProviderError as error:
                raise StoreUnavailable(str(error)) from None
            client.normalise_times = False
            return client
        try:
            client = IMAPClient(self.host, port=self.port, ssl=self.tls, timeout=self.timeout)
        except (OSError, IMAPClientError) as exc:
            raise StoreUnavailable(f"cannot reach the mail server {self.host}:{self.port}: {exc}") from None
        client.normalise_times = False  # keep the server's time zones; converted to UTC here
        try:
            client.login(self.username, self.password)
        except LoginError:
            _logout(client)
            raise StoreUnavailable(f"the mail server {self.host} refused the login") from None
        except (IMAPClientAbortError, OSError) as exc:
            _logout(client)
            raise StoreUnavailable(f"lost the connection to the mail server {self.host}: {exc}") from None
        except IMAPClientError as exc:
            _logout(client)
            raise _error(exc) from None
        return client

    @contextmanager
    def _session(self, *, fresh: bool = False) -> Iterator[IMAPClient]:
        """A logged-in connection: from the pool when the store is pooled and not `fresh`, given
        back afterwards unless the connection failed; otherwise a new one, logged out afterwards."""
        key = (self.host, self.port, self.tls, self.username, self.password) if self.pooled and not fresh else None
        # A provider the caller named gets a whole session's time at most, whatever it does.
        deadline = Deadline(settings.CONNECTED_MAILBOX_SESSION_SECONDS) if self.remote else None
        with _session_slot(self.sessions_key), deadline or nullcontext():
            with self._client(key, deadline) as client:
                yield client

    @contextmanager
    def _client(self, key, deadline: Deadline | None) -> Iterator[IMAPClient]:
        client = (_POOL.take(key) if key else None) or self._connect(deadline)
        broken = True
        try:
            yield client
            broken = False
        except ResponseTooLarge:
            with suppress(OSError):
                client.shutdown()  # the rest of the literal is still coming: nothing more is read
            client = None
            megabytes = (self.max_literal or 0) // (1024 * 1024)
            raise StoreError(f"a message at {self.host} is larger than this plan's {megabytes} MB; read it at the "
                             "provider") from None
        except (IMAPClientAbortError, OSError) as exc:
            said = "" if self.remote else f": {exc}"
            raise StoreUnavailable(f"lost the connection to the mail server {self.host}{said}") from None
        except IMAPClientError as exc:
            broken = False  # the server refused a command; the connection is fine
            raise _error(exc) from None
        except StoreError:
            broken = False
            raise
        finally:
            if client is None:
                pass
            elif key and not broken and _unselected(client):
                _POOL.give(key, client)
            else:
                _logout(client)

    def _select(self, client: IMAPClient, folder: str, *, readonly: bool) -> int:
        """Select (or EXAMINE) the folder; returns how many messages it holds."""
        try:
            return client.select_folder(validate_folder(folder), readonly=readonly)[b"EXISTS"]
        except IMAPClientError as exc:
            raise _error(exc, folder) from None

    def _require(self, client: IMAPClient, folder: str, uid: int) -> None:
        if not client.search(["UID", validate_uid(uid)]):
            raise MessageNotFound(f"message {uid} not found in {folder}")

    def _summaries(self, client: IMAPClient, uids: list[int]) -> list[MessageSummary]:
        """Summaries of these UIDs of the selected folder, in the order given."""
        if not uids:
            return []
        data = _fetch_summaries(client, uids, by_uid=True)
        return [self._summary(uid, data[uid]) for uid in uids if uid in data]

    def _summaries_at(self, client: IMAPClient, positions: list[int]) -> list[MessageSummary]:
        """Summaries of the messages at these sequence numbers of the selected folder, in that order:
        a page of the whole folder in arrival order without a SEARCH listing every UID."""
        if not positions:
            return []
        data = _fetch_summaries(client, positions, by_uid=False)
        return [self._summary(data[n][b"UID"], data[n]) for n in positions if n in data]

    def _summary(self, uid: int, item: dict) -> MessageSummary:
        envelope: Envelope = item[b"ENVELOPE"]
        flags = _flags(item[b"FLAGS"])
        senders = [text for text in (_address(a) for a in envelope.from_ or ()) if text]
        recipients = [text for text in (_address(a) for a in envelope.to or ()) if text]
        return MessageSummary(
            uid=uid,
            subject=_text(envelope.subject),
            from_=", ".join(senders),
            date=_utc(envelope.date) or _utc(item.get(b"INTERNALDATE")),
            seen=SEEN in flags,
            starred=FLAGGED in flags,
            has_attachments=_has_attachments(item[b"BODYSTRUCTURE"]),
            size=item[b"RFC822.SIZE"],
            keywords=tuple(flag for flag in flags if not flag.startswith("\\")),
            to=", ".join(recipients),
        )

    # folders

    def _list(self, client: IMAPClient, listed=None) -> list[tuple[str, str | None]]:
        """Selectable folders with their special use: INBOX, the defaults, then the rest by name."""
        folders = []
        for flags, _delimiter, name in client.list_folders() if listed is None else listed:
            names = {_text(flag) for flag in flags}
            if names & {"\\Noselect", "\\NonExistent"}:
                continue
            special_use = next((flag for flag in names if flag in SPECIAL_USES), None)
            folders.append(("INBOX" if name.upper() == "INBOX" else name, special_use))
        order = list(DEFAULT_FOLDERS)
        return sorted(folders, key=lambda f: (order.index(f[0]) if f[0] in order else len(order), f[0]))

    def ensure_folders(self) -> None:
        with self._session() as client:
            existing = self._list(client)
            names = {name for name, _ in existing}
            uses = {use for _, use in existing if use}
            for name, special_use in DEFAULT_FOLDERS.items():
                if name not in names and special_use not in uses:
                    client.create_folder(name)
                    client.subscribe_folder(name)

    def folders(self) -> list[Folder]:
        with self._session() as client:
            if client.has_capability("LIST-STATUS") and client.has_capability("SPECIAL-USE"):
                listed, counts = _list_with_status(client)
                return [Folder(name, special_use, *counts.get(name, (0, 0)))
                        for name, special_use in self._list(client, listed)]
            folders = []
            for name, special_use in self._list(client):
                status = client.folder_status(name, [b"MESSAGES", b"UNSEEN"])
                folders.append(Folder(name, special_use, status[b"MESSAGES"], status[b"UNSEEN"]))
            return folders

    def folders_started(self) -> Callable[[], list[Folder]]:
        """The folders, read from now on another pooled connection while the caller's own commands
        run on theirs; calling the result waits for them (and raises what folders() raised). A store
        that is not pooled (a connected mailbox) reads them when called: a second login at another
        provider costs more than it saves."""
        if not self.pooled:
            return self.folders
        return _ALONGSIDE.submit(self.folders).result

    # messages

    def list(
        self,
        folder: str = "INBOX",
        *,
        page: int = 1,
        per_page: int = 50,
        starred_only: bool = False,
        unseen_only: bool = False,
        keyword: str | None = None,
        criteria: Criteria | None = None,
        sort: str = "arrival",
        reverse: bool = True,
    ) -> MessagePage:
        keys, charset = _search_keys(criteria or Criteria(), starred_only=starred_only, unseen_only=unseen_only,
                                     keyword=keyword)
        validate_sort(sort)
        with self._session() as client:
            total = self._select(client, folder, readonly=True)
            if keys == ["ALL"] and sort == "arrival":  # the folder as it is: sequence numbers are arrival order
                positions = range(total, 0, -1) if reverse else range(1, total + 1)
                return MessagePage(self._summaries_at(client, list(page_window(positions, page=page, size=per_page))),
                                   total, page, per_page)
            uids = self._sorted(client, keys, charset, sort, reverse)
            window = page_window(uids, page=page, size=per_page)
            return MessagePage(self._summaries(client, window), len(uids), page, per_page)

    def _sorted(self, client: IMAPClient, keys: list, charset: str | None, sort: str, reverse: bool) -> list[int]:
        """UIDs matching, ordered by the server (IMAP SORT); arrival order is UID order."""
        if sort != "arrival" and client.has_capability("SORT"):
            return list(client.sort([f"{'REVERSE ' if reverse else ''}{sort.upper()}"], keys, charset or "UTF-8"))
        uids = sorted(client.search(keys, charset=charset), reverse=reverse)
        if sort == "arrival":
            return uids
        # A server without SORT: order here by the envelope fields.
        data = client.fetch(uids, [b"ENVELOPE", b"RFC822.SIZE", b"INTERNALDATE"]) if uids else {}
        summaries = {uid: self._sort_value(sort, data[uid]) for uid in uids if uid in data}
        return sorted(summaries, key=lambda uid: (summaries[uid], uid), reverse=reverse)

    @staticmethod
    def _sort_value(sort: str, item: dict):
        envelope: Envelope = item[b"ENVELOPE"]
        if sort == "size":
            return item[b"RFC822.SIZE"]
        if sort == "date":
            return (_utc(envelope.date) or _utc(item[b"INTERNALDATE"])).timestamp()
        if sort == "from":
            return next((_text(a.mailbox) + "@" + _text(a.host) for a in envelope.from_ or () if a.mailbox), "").lower()
        return _text(envelope.subject).lower()

    def uids(self, folder: str, criteria: Criteria | None = None) -> list[int]:
        keys, charset = _search_keys(criteria or Criteria())
        with self._session() as client:
            self._select(client, folder, readonly=True)
            return sorted(client.search(keys, charset=charset), reverse=True)

    # folder management

    def _existing(self, client: IMAPClient, name: str) -> tuple[str, str | None]:
        validate_folder(name)
        for found, special_use in self._list(client):
            if found == name:
                return found, special_use
        raise FolderNotFound(f"folder {name!r} does not exist")

    def _user_folder(self, client: IMAPClient, name: str) -> str:
        found, special_use = self._existing(client, name)
        if special_use or found in DEFAULT_FOLDERS:
            raise StoreError(f"{found} is a folder every mailbox has; it cannot be renamed or deleted")
        return found

    def _free_name(self, client: IMAPClient, name: str) -> str:
        name = validate_new_folder(name)
        if name in {found for found, _ in self._list(client)}:
            raise StoreError(f"a folder named {name} exists already")
        return name

    def create_folder(self, name: str) -> None:
        with self._session() as client:
            name = self._free_name(client, name)
            try:
                client.create_folder(name)
            except IMAPClientError as exc:
                raise StoreError(f"the mail server did not create {name}: {exc}") from None
            client.subscribe_folder(name)

    def rename_folder(self, name: str, new_name: str) -> None:
        with self._session() as client:
            old = self._user_folder(client, name)
            new = self._free_name(client, new_name)
            try:
                client.rename_folder(old, new)
            except IMAPClientError as exc:
                raise StoreError(f"the mail server did not rename {old}: {exc}") from None
            with suppress(IMAPClientError):
                client.unsubscribe_folder(old)
            client.subscribe_folder(new)

    def delete_folder(self, name: str) -> None:
        with self._session() as client:
            old = self._user_folder(client, name)
            if any(found.startswith(f"{old}/") for found, _ in self._list(client)):
                raise StoreError(f"{old} has subfolders; delete them first")
            with suppress(IMAPClientError):
                client.unsubscribe_folder(old)
            try:
                client.delete_folder(old)
            except IMAPClientError as exc:
                raise StoreError(f"the mail server did not delete {old}: {exc}") from None

    # many messages at once

    def _present(self, client: IMAPClient, uids: list[int]) -> list[int]:
        wanted = sorted({validate_uid(uid) for uid in uids})
        if not wanted:
            return []
        return sorted(client.search(["UID", ",".join(map(str, wanted))]))

    def set_flags_many(self, folder, uids, *, seen=None, starred=None, add_keywords=(), remove_keywords=()):
        add = [flag for flag, on in ((SEEN, seen), (FLAGGED, starred)) if on is True]
        add += [validate_keyword(keyword) for keyword in add_keywords]
        remove = [flag for flag, on in ((SEEN, seen), (FLAGGED, starred)) if on is False]
        remove += [validate_keyword(keyword) for keyword in remove_keywords]
        with self._session() as client:
            self._select(client, folder, readonly=False)
            present = self._present(client, uids)
            if present and add:
                client.add_flags(present, add, silent=True)
            if present and remove:
                client.remove_flags(present, remove, silent=True)

    def move_many(self, folder: str, uids: list[int], target: str) -> None:
        validate_folder(target)
        with self._session(fresh=True) as client:  # adds mail: the quota as of a new login
            self._select(client, folder, readonly=False)
            present = self._present(client, uids)
            if not present or target == folder:
                return
            try:
                if client.has_capability("MOVE"):
                    client.move(present, target)
                else:
                    client.copy(present, target)
                    self._expunge(client, present)
            except IMAPClientError as exc:
                raise _error(exc, target) from None

    def delete_many(self, folder: str, uids: list[int]) -> None:
        with self._session() as client:
            self._select(client, folder, readonly=False)
            present = self._present(client, uids)
            if present:
                self._expunge(client, present)

    def related(self, folder: str, message_ids: list[str]) -> list[MessageSummary]:
        ids = [value for value in dict.fromkeys(message_ids) if value and _SAFE_ID.fullmatch(value)][-20:]
        if not ids:
            return []
        terms = [["HEADER", name, value] for value in ids for name in ("Message-ID", "References", "In-Reply-To")]
        keys = terms[0]
        for term in terms[1:]:
            keys = ["OR", keys, term]
        with self._session() as client:
            self._select(client, folder, readonly=True)
            return self._summaries(client, sorted(client.search(keys)))

    def fetch(self, folder: str, uid: int) -> StoredMessage:
        validate_uid(uid)
        with self._session() as client:
            self._select(client, folder, readonly=True)
            # BODY.PEEK: reading does not set \Seen; the API marks a message seen explicitly.
            data = client.fetch([uid], [b"BODY.PEEK[]", b"FLAGS", b"INTERNALDATE"]).get(uid)
            if not data or b"BODY[]" not in data:
                raise MessageNotFound(f"message {uid} not found in {folder}")
            return StoredMessage(
                uid=uid,
                folder=folder,
                raw=bytes(data[b"BODY[]"]),
                flags=_flags(data[b"FLAGS"]),
                internal_date=_utc(data[b"INTERNALDATE"]),
            )

    def set_flags(
        self,
        folder: str,
        uid: int,
        *,
        seen: bool | None = None,
        starred: bool | None = None,
        add_keywords: tuple[str, ...] = (),
        remove_keywords: tuple[str, ...] = (),
    ) -> None:
        add = [flag for flag, on in ((SEEN, seen), (FLAGGED, starred)) if on is True]
        add += [validate_keyword(keyword) for keyword in add_keywords]
        remove = [flag for flag, on in ((SEEN, seen), (FLAGGED, starred)) if on is False]
        remove += [validate_keyword(keyword) for keyword in remove_keywords]
        with self._session() as client:
            self._select(client, folder, readonly=False)
            self._require(client, folder, uid)
            if add:
                client.add_flags([uid], add, silent=True)
            if remove:
                client.remove_flags([uid], remove, silent=True)

    def move(self, folder: str, uid: int, target: str) -> int:
        validate_folder(target)
        with self._session(fresh=True) as client:  # adds mail: the quota as of a new login
            self._select(client, folder, readonly=False)
            self._require(client, folder, uid)
            if target == folder:
                return uid
            try:
                if client.has_capability("MOVE"):
                    untagged = client._imap.untagged_responses  # imaplib keeps response codes here
                    untagged.pop("COPYUID", None)
                    answer = client.move([uid], target) or b""
                    # MOVE reports COPYUID in an untagged OK before it expunges the source.
                    answer += b"".join(b" COPYUID " + data for data in untagged.pop("COPYUID", []))
                else:
                    answer = client.copy([uid], target) or b""
                    self._expunge(client, uid)
            except IMAPClientError as exc:
                raise _error(exc, target) from None
            found = _COPYUID.search(answer)
            if found:
                return int(found.group(1))
            return self._newest_uid(client, target)

    def _newest_uid(self, client: IMAPClient, folder: str) -> int:
        """Without UIDPLUS the message just stored is the newest in its folder."""
        self._select(client, folder, readonly=True)
        uids = client.search(["ALL"])
        if not uids:
            raise StoreError(f"the message is not in {folder}")
        return max(uids)

    def _expunge(self, client: IMAPClient, uids: int | list[int]) -> None:
        uids = [uids] if isinstance(uids, int) else uids
        client.add_flags(uids, [b"\\Deleted"], silent=True)
        if client.has_capability("UIDPLUS"):
            client.uid_expunge(uids)  # only these messages, not others flagged \Deleted
        else:
            client.expunge()

    def delete(self, folder: str, uid: int) -> None:
        with self._session() as client:
            self._select(client, folder, readonly=False)
            self._require(client, folder, uid)
            self._expunge(client, uid)

    def deliver(self, raw: bytes, *, recipient: str, envelope_from: str) -> Delivered:
        """Through Dovecot's LMTP (managed mailboxes), so its quota applies; Dovecot adds the trace."""
        delivered = self.deliver_many(raw, recipients=[recipient], envelope_from=envelope_from)[recipient]
        if isinstance(delivered, DeliveryRefused):
            raise delivered
        return delivered

    def deliver_many(self, raw: bytes, *, recipients: list[str], envelope_from: str
                     ) -> dict[str, Delivered | DeliveryRefused]:
        """Several recipients in one LMTP transaction (Dovecot delivers by recipient, whatever mailbox
        this store is bound to), each refusal that recipient's alone."""
        replies = lmtp_deliver_many(settings.DOVECOT_LMTP, envelope_from=envelope_from, recipients=recipients, raw=raw)
        return {recipient: self._delivered(raw, recipient, envelope_from) if reply.startswith("2")
                else DeliveryRefused(reply) for recipient, reply in replies.items()}

    @staticmethod
    def _delivered(raw: bytes, recipient: str, envelope_from: str) -> Delivered:
        stored = with_headers(raw, trace_headers(recipient, envelope_from))
        return Delivered(None, len(stored) + stored.count(b"\n") - stored.count(b"\r\n"))  # RFC822.SIZE: CRLF

    def append(self, folder: str, raw: bytes, *, flags: tuple[str, ...] = (), date: datetime | None = None) -> int:
        validate_folder(folder)
        checked = [flag if flag.startswith("\\") else validate_keyword(flag) for flag in flags]
        with self._session(fresh=True) as client:  # adds mail: the quota as of a new login
            try:
                answer = client.append(folder, raw, flags=checked, msg_time=date) or b""
            except IMAPClientError as exc:
                raise _error(exc, folder) from None
            found = _APPENDUID.search(answer)
            if found:
                return int(found.group(1))
            return self._newest_uid(client, folder)

    def search(self, folder: str, query: str, *, limit: int = 50) -> list[MessageSummary]:
        keys, charset = _search_keys(Criteria(text=query))
        with self._session() as client:
            self._select(client, folder, readonly=True)
            uids = sorted(client.search(keys, charset=charset), reverse=True)[:limit]
            return self._summaries(client, uids)

    def remove_keyword_everywhere(self, keyword: str) -> None:
        validate_keyword(keyword)
        with self._session() as client:
            for name, _ in self._list(client):
                client.select_folder(name)
                uids = client.search(["KEYWORD", keyword])
                if uids:
                    client.remove_flags(uids, [keyword], silent=True)

    def storage_used(self) -> int:
        """Bytes used: our Dovecot's own copy of the figure (its quota_clone plugin keeps it in the
        dovecot_quota table after every change), else asked over IMAP, which costs the server a login
        as the mailbox (a mailbox elsewhere, or one Dovecot has not counted yet)."""
        if self.usage_clone is not None and (cloned := cloned_usage(self.usage_clone)) is not None:
            return cloned
        with self._session() as client:
            if client.has_capability("QUOTA"):
                _roots, quotas = client.get_quota_root("INBOX")
                storage = [quota.usage for quota in quotas if quota.resource.upper() == "STORAGE"]
                if storage:
                    return sum(storage) * 1024  # IMAP QUOTA counts STORAGE in KiB
            total = 0
            for name, _ in self._list(client):
                client.select_folder(name, readonly=True)
                uids = client.search(["ALL"])
                if uids:
                    total += sum(item[b"RFC822.SIZE"] for item in client.fetch(uids, [b"RFC822.SIZE"]).values())
            return total


def cloned_usage(address: str) -> int | None:
    """The bytes Dovecot last recorded for a mailbox (docker/dovecot/dovecot-dict-quota-maps.conf.ext)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT bytes FROM dovecot_quota WHERE username = %s", [address])
        row = cursor.fetchone()
    return None if row is None else row[0]


def _list_with_status(client: IMAPClient) -> tuple[list, dict[str, tuple[int, int]]]:
    """Every folder and its message and unseen counts in one round trip (LIST-STATUS, RFC 5819),
    where a STATUS per folder would cost one each. imapclient has no call for it: the command goes
    through its imaplib connection as its own list_folders does, and the answers through its parsers."""
    imap = client._imap
    typ, data = imap._simple_command("LIST", client._normalise_folder(""), client._normalise_folder("*"),
                                     "RETURN", "(SPECIAL-USE STATUS (MESSAGES UNSEEN))")
    client._checkok("list", typ, data)
    statuses = imap.untagged_responses.pop("STATUS", [])
    typ, data = imap._untagged_response(typ, data, "LIST")
    listed = client._proc_folder_list(data)
    counts = {}
    for name, items in chunk(parse_response([item for item in statuses if item]), size=2):
        name = str(name) if isinstance(name, int) else decode_utf7(name) if client.folder_encode else name
        values = dict(zip(items[::2], items[1::2]))
        counts["INBOX" if name.upper() == "INBOX" else name] = (values.get(b"MESSAGES", 0), values.get(b"UNSEEN", 0))
    return listed, counts
