"""The mail store interface. Two implementations: `imap` (Dovecot, or a connected provider) and
`embedded` (rows in our database, for `make run` without Dovecot). One contract test suite
(mailcore/tests/store/test_store_contract.py) runs against both.

A store object is bound to one mailbox. Folder names are IMAP names ("INBOX", "Sent",
"Archive"...), UIDs are IMAP UIDs (positive integers, unique and increasing within a folder).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Protocol

from mailcore.errors import DomainError, ErrorCode

# Folders every managed mailbox has, with their IMAP special-use flag (RFC 6154).
DEFAULT_FOLDERS = {"INBOX": None, "Sent": "\\Sent", "Drafts": "\\Drafts", "Archive": "\\Archive",
                   "Junk": "\\Junk", "Trash": "\\Trash"}

SEEN = "\\Seen"
FLAGGED = "\\Flagged"  # "starred" in the API
# Dovecot's attachment detection keywords (mail_attachment_detection_options = add-flags): the
# server's own bookkeeping, never shown as labels.
HAS_ATTACHMENT = "$HasAttachment"
SERVER_KEYWORDS = frozenset({HAS_ATTACHMENT, "$HasNoAttachment"})

# How a list may be ordered (IMAP SORT keys, RFC 5256); newest first unless `reverse` is off.
SORT_KEYS = ("date", "arrival", "from", "subject", "size")


_KEYWORD = re.compile(r"^[!#$&'+,\-./0-9:;<=>?@A-Z^_`a-z|~]+$")


class StoreError(DomainError):
    """A store operation could not be done; the message says why in words a user understands."""

    code = ErrorCode.INVALID


class FolderNotFound(StoreError):
    code = ErrorCode.NOT_FOUND


class MessageNotFound(StoreError):
    code = ErrorCode.NOT_FOUND


class StoreUnavailable(StoreError):
    """The server behind the store cannot be reached or refused our login."""

    code = ErrorCode.UNAVAILABLE

    @property
    def detail(self) -> str:
        return f"The mail server could not be reached: {self}"


class StoreBusy(StoreUnavailable):
    """The account already has as many sessions open with its provider as it may; retry_after says when to try again."""

    code = ErrorCode.RATE_LIMITED

    @property
    def detail(self) -> str:
        return str(self)


class QuotaExceeded(StoreError):
    code = ErrorCode.STORAGE_FULL


class DeliveryRefused(StoreError):
    """The store's mail server refused an arriving message; `reply` is its SMTP/LMTP reply."""

    def __init__(self, reply: str):
        super().__init__(reply)
        self.reply = reply


@dataclass(frozen=True)
class Delivered:
    uid: int | None  # in INBOX, when the store tells it
    size: int  # bytes of the stored copy as list() reports it (trace headers included)


def with_headers(raw: bytes, headers: list[tuple[str, str]]) -> bytes:
    """Prepend headers in the message's own line ending; the rest of the bytes stay as they were."""
    newline = b"\r\n" if b"\r\n" in raw[:4096] or not raw else b"\n"
    lines = []
    for name, value in headers:
        if "\r" in value or "\n" in value:
            raise ValueError(f"header {name} would break the message")
        lines.append(f"{name}: {value}".encode("utf-8") + newline)
    return b"".join(lines) + raw


# The screener's mark on a copy for Junk (mailcore.inbound.screening): Dovecot's sieve_before script
# (docker/dovecot/junk-verdict.sieve) and the embedded store's delivery file such a copy in Junk.
VERDICT_HEADER = "X-Mailwell-Verdict"
_VERDICT_JUNK = re.compile(rb"(?im)^x-mailwell-verdict:[ \t]*junk[ \t]*\r?$")


def delivery_folder(raw: bytes) -> str:
    """Where an arriving copy goes: Junk when the screener marked it so, else the Inbox."""
    end = min((index for index in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if index >= 0), default=len(raw))
    return "Junk" if _VERDICT_JUNK.search(raw[:end]) else "INBOX"


def trace_headers(recipient: str, envelope_from: str) -> list[tuple[str, str]]:
    """What a delivered copy starts with (Dovecot's LMTP adds the same two itself)."""
    return [("Return-Path", f"<{envelope_from}>"), ("Delivered-To", recipient)]


def validate_folder(folder: str) -> str:
    """A folder name that cannot break out of an IMAP command; anything else cannot exist."""
    if not isinstance(folder, str) or not folder or any(char in folder for char in "\r\n\0"):
        raise FolderNotFound(f"folder {folder!r} does not exist")
    return folder


def validate_uid(uid: int) -> int:
    """A UID is a positive integer (Modoboa's validate_imap_uid); anything else cannot exist."""
    if isinstance(uid, bool) or not isinstance(uid, int) or uid < 1:
        raise MessageNotFound(f"message {uid!r} not found")
    return uid


def validate_keyword(keyword: str) -> str:
    if not isinstance(keyword, str) or not _KEYWORD.match(keyword):
        raise StoreError(f"invalid keyword {keyword!r}")
    return keyword


@dataclass(frozen=True)
class Criteria:
    """What a list or search asks for; every field narrows it (all must hold). Done by the store's
    server: IMAP SEARCH keys, or the embedded store's columns."""

    text: str = ""  # anywhere: headers and body
    from_: str = ""
    to: str = ""  # To or Cc
    subject: str = ""
    body: str = ""
    since: date | None = None  # on or after this day
    before: date | None = None  # before this day
    has_attachment: bool = False
    unseen: bool = False
    starred: bool = False
    keyword: str | None = None

    def __post_init__(self):
        if self.keyword is not None:
            validate_keyword(self.keyword)

    @property
    def is_empty(self) -> bool:
        return self == Criteria()


def validate_sort(sort: str) -> str:
    if sort not in SORT_KEYS:
        raise StoreError(f"sort must be one of {', '.join(SORT_KEYS)}")
    return sort


def validate_new_folder(name: str) -> str:
    """A name a user may give a folder: not blank, no control characters or IMAP wildcards, not a
    default folder's name, at most 200 characters; "/" makes a subfolder."""
    name = (name or "").strip()
    if not name:
        raise StoreError("give the folder a name")
    if len(name) > 200:
        raise StoreError("a folder name is at most 200 characters")
    if any(ord(char) < 32 or char in "*%\x7f\"\\" for char in name) or name.startswith("/") or name.endswith("/") \
            or "//" in name:
        raise StoreError("a folder name cannot contain control characters, *, %, quotes, backslashes or empty parts")
    if name.upper() == "INBOX" or name in DEFAULT_FOLDERS:
        raise StoreError(f"{name} is a folder every mailbox has")
    return name


@dataclass(frozen=True)
class Folder:
    name: str
    special_use: str | None
    total: int
    unseen: int


@dataclass(frozen=True)
class MessageSummary:
    uid: int
    subject: str
    from_: str
    date: datetime | None
    seen: bool
    starred: bool
    has_attachments: bool
    size: int
    keywords: tuple[str, ...] = ()
    to: str = ""


@dataclass(frozen=True)
class ThreadMember:
    """A message of a conversation, wherever it is filed."""

    folder: str
    summary: MessageSummary


@dataclass(frozen=True)
class MessagePage:
    messages: list[MessageSummary]
    total: int
    page: int
    per_page: int


@dataclass(frozen=True)
class StoredMessage:
    uid: int
    folder: str
    raw: bytes
    flags: tuple[str, ...] = field(default_factory=tuple)
    internal_date: datetime | None = None

    @property
    def seen(self) -> bool:
        return SEEN in self.flags

    @property
    def starred(self) -> bool:
        return FLAGGED in self.flags


class MailStore(Protocol):
    def ensure_folders(self) -> None:
        """Create the default folders that do not exist yet."""

    def folders(self) -> list[Folder]: ...

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
        """One page of the messages matching; by default newest first (highest UID first)."""

    def uids(self, folder: str, criteria: Criteria | None = None) -> list[int]:
        """Every UID matching, for "select all matching the search"."""

    def create_folder(self, name: str) -> None: ...

    def rename_folder(self, name: str, new_name: str) -> None:
        """Default folders (special use) cannot be renamed."""

    def delete_folder(self, name: str) -> None:
        """With its messages; default folders cannot be deleted."""

    def set_flags_many(self, folder: str, uids: list[int], *, seen: bool | None = None, starred: bool | None = None,
                       add_keywords: tuple[str, ...] = (), remove_keywords: tuple[str, ...] = ()) -> None:
        """Flags on many messages at once; UIDs that no longer exist are skipped."""

    def move_many(self, folder: str, uids: list[int], target: str) -> None: ...

    def delete_many(self, folder: str, uids: list[int]) -> None: ...

    def related(self, folder: str, message_ids: list[str]) -> list[MessageSummary]:
        """Messages of the folder whose Message-ID is one of these, or whose References or
        In-Reply-To names one of them: a conversation's members filed here."""

    def fetch(self, folder: str, uid: int) -> StoredMessage: ...

    def header_values(self, folder: str, uids: list[int], name: str) -> dict[int, list[str]]:
        """One header's values in each message, by UID, in the message's order (a UID gone is left
        out); only the head of each message is read."""

    def set_flags(
        self,
        folder: str,
        uid: int,
        *,
        seen: bool | None = None,
        starred: bool | None = None,
        add_keywords: tuple[str, ...] = (),
        remove_keywords: tuple[str, ...] = (),
    ) -> None: ...

    def move(self, folder: str, uid: int, target: str) -> int:
        """Move a message; returns its UID in the target folder."""

    def delete(self, folder: str, uid: int) -> None:
        """Delete permanently (flag \\Deleted and expunge that UID only)."""

    def append(self, folder: str, raw: bytes, *, flags: tuple[str, ...] = (), date: datetime | None = None) -> int:
        """Store a message; returns its UID."""

    def deliver(self, raw: bytes, *, recipient: str, envelope_from: str) -> Delivered:
        """An arriving message into INBOX as the mail server delivers it (trace headers, the quota).
        Raises QuotaExceeded, DeliveryRefused (with the server's reply) or StoreUnavailable."""

    def search(self, folder: str, query: str, *, limit: int = 50) -> list[MessageSummary]:
        """Server-side text search (subject, from, to, body), newest first."""

    def remove_keyword_everywhere(self, keyword: str) -> None: ...

    def storage_used(self) -> int:
        """Bytes used by the mailbox."""


def deliver_many(stores: dict[str, MailStore], raw: bytes, *, envelope_from: str) -> dict[str, Delivered | Exception]:
    """One arriving message into several mailboxes (recipient address -> the store of its mailbox):
    each recipient's outcome on its own, Delivered or what its delivery raised. A store is bound to
    one mailbox, so this is not a store method: stores of a kind whose server takes many recipients
    in one transaction (ImapStore.deliver_many: Dovecot's LMTP) get theirs together, any other
    store delivers each in turn."""
    outcomes: dict[str, Delivered | Exception] = {}
    for kind in dict.fromkeys(type(store) for store in stores.values()):
        together = [recipient for recipient, store in stores.items() if type(store) is kind]
        if hasattr(kind, "deliver_many"):
            outcomes.update(stores[together[0]].deliver_many(raw, recipients=together, envelope_from=envelope_from))
            continue
        for recipient in together:
            try:
                outcomes[recipient] = stores[recipient].deliver(raw, recipient=recipient, envelope_from=envelope_from)
            except Exception as error:  # one mailbox's failure is its recipient's alone
                outcomes[recipient] = error
    return outcomes
