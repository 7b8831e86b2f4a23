"""The mail store interface. Two implementations: `imap` (Dovecot, or a connected provider) and
`embedded` (rows in our database, for `make run` without Dovecot). One contract test suite
(mailcore/tests/test_store_contract.py) runs against both.

A store object is bound to one mailbox. Folder names are IMAP names ("INBOX", "Sent",
"Archive"...), UIDs are IMAP UIDs (positive integers, unique and increasing within a folder).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from mailcore.errors import DomainError, ErrorCode

# Folders every managed mailbox has, with their IMAP special-use flag (RFC 6154).
DEFAULT_FOLDERS = {"INBOX": None, "Sent": "\\Sent", "Drafts": "\\Drafts", "Archive": "\\Archive",
                   "Junk": "\\Junk", "Trash": "\\Trash"}

SEEN = "\\Seen"
FLAGGED = "\\Flagged"  # "starred" in the API


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
    ) -> MessagePage:
        """Newest first (highest UID first)."""

    def fetch(self, folder: str, uid: int) -> StoredMessage: ...

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
