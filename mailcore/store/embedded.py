"""The embedded mail store: folders and messages as rows in our database.

It serves `make run` where no Dovecot runs; it behaves as the IMAP store does (UIDs increase
within a folder and are never reused, flags and keywords, permanent delete) so the same
contract tests pass on both.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models import BinaryField
from django.db.models.functions import Coalesce, Lower, Substr
from django.utils import timezone

from mailcore.paging import page_window
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import (
    DEFAULT_FOLDERS,
    FLAGGED,
    SEEN,
    Criteria,
    Delivered,
    Folder,
    FolderNotFound,
    MessageNotFound,
    MessagePage,
    MessageSummary,
    QuotaExceeded,
    StoredMessage,
    StoreError,
    delivery_folder,
    trace_headers,
    validate_folder,
    validate_keyword,
    validate_new_folder,
    validate_sort,
    validate_uid,
    with_headers,
)
from mailcore.store.models import StoredFolder
from mailcore.store.models import StoredMessage as MessageRow
from mailcore.store.reading import HEAD_BYTES, ReadMessage, header_values_in, message_ids, read

# The columns each sort key orders by (the IMAP SORT keys' meaning).
_SORT_COLUMNS = {"date": Coalesce("date", "internal_date"), "arrival": F("uid"), "from": Lower("from_header"),
                 "subject": Lower("subject"), "size": F("size")}


def _matching(rows, criteria: Criteria):
    """The criteria as column filters; words match as substrings, case-insensitively, like IMAP SEARCH."""
    for word in f"{criteria.text} {criteria.body}".split():  # body words are part of search_text
        rows = rows.filter(search_text__contains=word.casefold())
    for word in criteria.from_.split():
        rows = rows.filter(from_header__icontains=word)
    for word in criteria.subject.split():
        rows = rows.filter(subject__icontains=word)
    for word in criteria.to.split():
        rows = rows.filter(to_header__icontains=word)
    if criteria.since:
        rows = rows.filter(internal_date__date__gte=criteria.since)
    if criteria.before:
        rows = rows.filter(internal_date__date__lt=criteria.before)
    if criteria.has_attachment:
        rows = rows.filter(has_attachments=True)
    if criteria.unseen:
        rows = rows.filter(seen=False)
    if criteria.starred:
        rows = rows.filter(flagged=True)
    if criteria.keyword:
        rows = rows.filter(keywords__contains=f" {criteria.keyword} ")
    return rows


def _refs(message) -> str:
    """In-Reply-To and References ids, space-delimited with a space at each end (for `contains`)."""
    found = list(dict.fromkeys(message_ids(message.in_reply_to) + message_ids(message.references)))
    return f" {' '.join(found)} " if found else " "


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
            to=row.to_header,
        )

    def list(self, folder="INBOX", *, page=1, per_page=50, starred_only=False, unseen_only=False, keyword=None,
             criteria: Criteria | None = None, sort="arrival", reverse=True):
        rows = _matching(MessageRow.objects.filter(folder=self._folder(folder)), criteria or Criteria())
        if starred_only:
            rows = rows.filter(flagged=True)
        if unseen_only:
            rows = rows.filter(seen=False)
        if keyword:
            rows = rows.filter(keywords__contains=f" {validate_keyword(keyword)} ")
        total = rows.count()
        column = _SORT_COLUMNS[validate_sort(sort)]
        order = [column.desc() if reverse else column.asc(), "-uid" if reverse else "uid"]
        window = page_window(rows.order_by(*order).defer("raw", "search_text"), page=page, size=per_page)
        return MessagePage([self._summary(row) for row in window], total, page, per_page)

    def uids(self, folder: str, criteria: Criteria | None = None) -> list[int]:
        rows = _matching(MessageRow.objects.filter(folder=self._folder(folder)), criteria or Criteria())
        return list(rows.order_by("-uid").values_list("uid", flat=True))

    # folder management

    def _user_folder(self, name: str) -> StoredFolder:
        row = self._folder(name)
        if row.special_use or row.name in DEFAULT_FOLDERS:
            raise StoreError(f"{row.name} is a folder every mailbox has; it cannot be renamed or deleted")
        return row

    def _free_name(self, name: str) -> str:
        name = validate_new_folder(name)
        self.ensure_folders()
        if StoredFolder.objects.filter(mailbox=self.mailbox, name=name).exists():
            raise StoreError(f"a folder named {name} exists already")
        return name

    def create_folder(self, name: str) -> None:
        StoredFolder.objects.create(mailbox=self.mailbox, name=self._free_name(name))

    @transaction.atomic
    def rename_folder(self, name: str, new_name: str) -> None:
        row, new = self._user_folder(name), self._free_name(new_name)
        for child in StoredFolder.objects.filter(mailbox=self.mailbox, name__startswith=f"{row.name}/"):
            child.name = new + child.name[len(row.name):]
            child.save(update_fields=["name"])
        row.name = new
        row.save(update_fields=["name"])

    def delete_folder(self, name: str) -> None:
        row = self._user_folder(name)
        if StoredFolder.objects.filter(mailbox=self.mailbox, name__startswith=f"{row.name}/").exists():
            raise StoreError(f"{row.name} has subfolders; delete them first")
        row.delete()

    # many messages at once

    def _rows(self, folder: str, uids: list[int]):
        return MessageRow.objects.filter(folder=self._folder(folder), uid__in=[validate_uid(uid) for uid in uids])

    def set_flags_many(self, folder, uids, *, seen=None, starred=None, add_keywords=(), remove_keywords=()):
        for row in self._rows(folder, uids).only("uid"):
            self.set_flags(folder, row.uid, seen=seen, starred=starred, add_keywords=add_keywords,
                           remove_keywords=remove_keywords)

    def move_many(self, folder: str, uids: list[int], target: str) -> None:
        self._folder(target)
        for row in self._rows(folder, uids).order_by("uid").only("uid"):
            self.move(folder, row.uid, target)

    def delete_many(self, folder: str, uids: list[int]) -> None:
        self._rows(folder, uids).delete()

    def related(self, folder: str, message_ids: list[str]) -> list[MessageSummary]:
        ids = [value for value in dict.fromkeys(message_ids) if value][-20:]
        if not ids:
            return []
        match = Q(message_id__in=ids)
        for value in ids:
            match |= Q(thread_refs__contains=f" {value} ")
        rows = MessageRow.objects.filter(match, folder=self._folder(folder)).order_by("uid")
        return [self._summary(row) for row in rows.defer("raw", "search_text")]

    def header_values(self, folder: str, uids: list[int], name: str) -> dict[int, list[str]]:
        head = Substr("raw", 1, HEAD_BYTES, output_field=BinaryField())
        rows = self._rows(folder, uids).annotate(head=head).values_list("uid", "head")
        return {uid: header_values_in(value, name) for uid, value in rows}

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

    def _next_uid(self, folder: StoredFolder) -> int:
        return self._reserve_uids(folder, 1)

    @transaction.atomic
    def _reserve_uids(self, folder: StoredFolder, count: int) -> int:
        """The first of `count` consecutive UIDs, taken from the folder's counter (locked by the UPDATE)."""
        StoredFolder.objects.filter(pk=folder.pk).update(uid_next=F("uid_next") + count)
        return StoredFolder.objects.values_list("uid_next", flat=True).get(pk=folder.pk) - count

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
        """Into the Inbox, or into Junk for a copy the screener marked (as Dovecot's sieve_before does)."""
        message = with_headers(raw, trace_headers(recipient, envelope_from))
        return Delivered(self.append(delivery_folder(raw), message), len(message))

    def append(self, folder: str, raw: bytes, *, flags=(), date: datetime | None = None) -> int:
        return self.append_many(folder, [raw], flags=flags, date=date)[0]

    def append_many(self, folder: str, raws: list[bytes], *, flags=(), date: datetime | None = None,
                    summaries: list[ReadMessage] | None = None) -> list[int]:
        """Many messages into one folder with one quota check, one UID reservation and one INSERT
        (dispatch keeps a batch's copies in Sent this way). All or none: over the quota, none is kept.
        `summaries`, when the caller built the messages, are what reading.read would find in them."""
        with transaction.atomic():
            destination = self._folder(folder)
            if self.storage_used() + sum(len(raw) for raw in raws) > self.mailbox.quota_mb * 1024 * 1024:
                raise QuotaExceeded(f"{self.mailbox.address} is over its {self.mailbox.quota_mb} MB quota")
            keywords = [validate_keyword(flag) for flag in flags if not flag.startswith("\\")]
            first = self._reserve_uids(destination, len(raws))
            internal_date = date or timezone.now()
            MessageRow.objects.bulk_create([
                self._message_row(destination, first + index, raw, internal_date, flags, keywords,
                                  summaries[index] if summaries else None)
                for index, raw in enumerate(raws)
            ])
        return [first + index for index in range(len(raws))]

    @staticmethod
    def _message_row(destination: StoredFolder, uid: int, raw: bytes, internal_date: datetime, flags, keywords,
                     message: ReadMessage | None = None) -> MessageRow:
        message = message or read(raw, headers=False)  # the row keeps raw; its headers are read when shown
        return MessageRow(
            folder=destination,
            uid=uid,
            raw=raw,
            size=len(raw),
            internal_date=internal_date,
            seen=SEEN in flags,
            flagged=FLAGGED in flags,
            keywords=f" {' '.join(keywords)} " if keywords else " ",
            subject=message.subject,
            from_header=message.from_,
            date=message.date,
            has_attachments=message.has_attachments,
            to_header=", ".join([*message.to, *message.cc]),
            message_id=message.message_id[:998],
            thread_refs=_refs(message),
            search_text=" ".join(
                [message.subject, message.from_, *message.to, *message.cc, message.text, message.html]
            ).casefold(),
        )

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

