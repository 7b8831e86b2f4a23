"""The embedded mail store: folders and messages as rows in our database.

It serves `make run` where no Dovecot runs; it behaves as the IMAP store does (UIDs increase
within a folder and are never reused, flags and keywords, permanent delete) so the same
contract tests pass on both.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

from mailcore.paging import page_window
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import (
    DEFAULT_FOLDERS,
    FLAGGED,
    SEEN,
    Delivered,
    Folder,
    FolderNotFound,
    MessageNotFound,
    MessagePage,
    MessageSummary,
    QuotaExceeded,
    StoredMessage,
    trace_headers,
    validate_folder,
    validate_keyword,
    validate_uid,
    with_headers,
)
from mailcore.store.models import StoredFolder
from mailcore.store.models import StoredMessage as MessageRow
from mailcore.store.reading import read


class EmbeddedStore:
    def __init__(self, mailbox: Mailbox):
        self.mailbox = mailbox
        self._folders_ready = False

    # folders

    def ensure_folders(self) -> None:
        if self._folders_ready:
            return
        existing = set(StoredFolder.objects.filter(mailbox=self.mailbox).values_list("name", flat=True))
        for name, special_use in DEFAULT_FOLDERS.items():
            if name in existing:
                continue
            StoredFolder.objects.get_or_create(
                mailbox=self.mailbox, name=name, defaults={"special_use": special_use}
            )
        self._folders_ready = True

    def _folder(self, name: str) -> StoredFolder:
        name = validate_folder(name)
        if name.upper() == "INBOX":
            name = "INBOX"
        self.ensure_folders()
        try:
            return StoredFolder.objects.get(mailbox=self.mailbox, name=name)
        except StoredFolder.DoesNotExist:
            raise FolderNotFound(f"folder {name!r} does not exist") from None

    def folders(self) -> list[Folder]:
        self.ensure_folders()
        rows = StoredFolder.objects.filter(mailbox=self.mailbox).order_by("id")
        counts = {
            row["folder"]: row
            for row in MessageRow.objects.filter(folder__mailbox=self.mailbox)
            .values("folder")
            .annotate(total=Count("id"), unseen=Count("id", filter=Q(seen=False)))
        }
        return [
            Folder(row.name, row.special_use, counts.get(row.pk, {}).get("total") or 0,
                   counts.get(row.pk, {}).get("unseen") or 0)
            for row in rows
        ]

    # messages

    def _summary(self, row: MessageRow) -> MessageSummary:
        return MessageSummary(
            uid=row.uid,
            subject=row.subject,
            from_=row.from_header,
            date=row.date or row.internal_date,
            seen=row.seen,
            starred=row.flagged,
            has_attachments=row.has_attachments,
            size=row.size,
            keywords=tuple(row.keywords.split()),
        )

    def list(self, folder="INBOX", *, page=1, per_page=50, starred_only=False, unseen_only=False, keyword=None):
        rows = MessageRow.objects.filter(folder=self._folder(folder))
        if starred_only:
            rows = rows.filter(flagged=True)
        if unseen_only:
            rows = rows.filter(seen=False)
        if keyword:
            rows = rows.filter(keywords__contains=f" {validate_keyword(keyword)} ")
        total = rows.count()
        window = page_window(rows.order_by("-uid").defer("raw", "search_text"), page=page, size=per_page)
        return MessagePage([self._summary(row) for row in window], total, page, per_page)

    def _row(self, folder: str, uid: int) -> MessageRow:
        try:
            return MessageRow.objects.get(folder=self._folder(folder), uid=validate_uid(uid))
        except MessageRow.DoesNotExist:
            raise MessageNotFound(f"message {uid} not found in {folder}") from None

    def fetch(self, folder: str, uid: int) -> StoredMessage:
        row = self._row(folder, uid)
        flags = ([SEEN] if row.seen else []) + ([FLAGGED] if row.flagged else []) + row.keywords.split()
        return StoredMessage(uid=row.uid, folder=row.folder.name, raw=bytes(row.raw), flags=tuple(flags),
                             internal_date=row.internal_date)

    def set_flags(self, folder, uid, *, seen=None, starred=None, add_keywords=(), remove_keywords=()):
        row = self._row(folder, uid)
        if seen is not None:
            row.seen = seen
        if starred is not None:
            row.flagged = starred
        keywords = [k for k in row.keywords.split() if k not in remove_keywords]
        keywords += [validate_keyword(k) for k in add_keywords if k not in keywords]
        row.keywords = f" {' '.join(keywords)} " if keywords else " "
        row.save(update_fields=["seen", "flagged", "keywords"])

    @transaction.atomic
    def _next_uid(self, folder: StoredFolder) -> int:
        StoredFolder.objects.filter(pk=folder.pk).update(uid_next=F("uid_next") + 1)
        return StoredFolder.objects.values_list("uid_next", flat=True).get(pk=folder.pk) - 1

    @transaction.atomic
    def move(self, folder: str, uid: int, target: str) -> int:
        row = self._row(folder, uid)
        destination = self._folder(target)
        if destination.pk == row.folder_id:
            return row.uid
        row.folder, row.uid = destination, self._next_uid(destination)
        row.save(update_fields=["folder", "uid"])
        return row.uid

    def delete(self, folder: str, uid: int) -> None:
        self._row(folder, uid).delete()

    def deliver(self, raw: bytes, *, recipient: str, envelope_from: str) -> Delivered:
        message = with_headers(raw, trace_headers(recipient, envelope_from))
        return Delivered(self.append("INBOX", message), len(message))

    @transaction.atomic
    def append(self, folder: str, raw: bytes, *, flags=(), date: datetime | None = None) -> int:
        destination = self._folder(folder)
        if self.storage_used() + len(raw) > self.mailbox.quota_mb * 1024 * 1024:
            raise QuotaExceeded(f"{self.mailbox.address} is over its {self.mailbox.quota_mb} MB quota")
        message = read(raw)
        keywords = [validate_keyword(flag) for flag in flags if not flag.startswith("\\")]
        uid = self._next_uid(destination)
        MessageRow.objects.create(
            folder=destination,
            uid=uid,
            raw=raw,
            size=len(raw),
            internal_date=date or timezone.now(),
            seen=SEEN in flags,
            flagged=FLAGGED in flags,
            keywords=f" {' '.join(keywords)} " if keywords else " ",
            subject=message.subject,
            from_header=message.from_,
            date=message.date,
            has_attachments=message.has_attachments,
            search_text=" ".join(
                [message.subject, message.from_, *message.to, *message.cc, message.text, message.html]
            ).casefold(),
        )
        return uid

    def search(self, folder: str, query: str, *, limit: int = 50) -> list[MessageSummary]:
        rows = MessageRow.objects.filter(folder=self._folder(folder))
        for word in query.casefold().split():
            rows = rows.filter(search_text__contains=word)
        return [self._summary(row) for row in rows.order_by("-uid").defer("raw", "search_text")[:limit]]

    def remove_keyword_everywhere(self, keyword: str) -> None:
        token = f" {validate_keyword(keyword)} "
        for row in MessageRow.objects.filter(folder__mailbox=self.mailbox, keywords__contains=token):
            row.keywords = row.keywords.replace(token, " ") or " "
            row.save(update_fields=["keywords"])

    def storage_used(self) -> int:
        return MessageRow.objects.filter(folder__mailbox=self.mailbox).aggregate(total=Sum("size"))["total"] or 0

