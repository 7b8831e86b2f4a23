"""A mailbox's messages as every interface shows them (REST, MCP, webmail): paged lists with label
ids, one message with sanitized HTML and attachment references, search, folders, and changes
(flags, labels, folder, delete). Listing and searching a connected mailbox record a successful use
(its "cached IMAP session"). Interfaces only add what is theirs, such as the URL an attachment is fetched at."""
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from mailcore.inbox.connected import mailbox_session_touch
from mailcore.mailboxes.models import Label, Mailbox
from mailcore.mailboxes.selectors import label_list
from mailcore.sanitize import sanitize_mail_html
from mailcore.store.base import Folder, MessageNotFound, MessageSummary
from mailcore.store.factory import store_for
from mailcore.store.reading import Attachment, ReadMessage, attachment_payload, read


@dataclass(frozen=True)
class InboxSummary:
    """A list item: the store's summary plus the ids of the account's labels it carries."""

    summary: MessageSummary
    labels: list[int]

    def record(self) -> dict:
        return {**vars(self.summary), "labels": self.labels}


@dataclass(frozen=True)
class InboxPage:
    messages: list[InboxSummary]
    total: int
    page: int
    per_page: int


@dataclass(frozen=True)
class InboxMessage:
    """One message with both bodies; body_html is sanitized, remote images blocked unless allowed."""

    uid: int
    folder: str
    seen: bool
    starred: bool
    labels: list[int]
    size: int
    message: ReadMessage  # headers, addresses and both bodies as read from the raw message
    body_html: str
    remote_images_blocked: bool


def _labels_by_keyword(mailbox: Mailbox) -> dict[str, Label]:
    return {label.keyword: label for label in label_list(account=mailbox.account)}


def _label_ids(keywords, labels: dict[str, Label]) -> list[int]:
    return [labels[keyword].pk for keyword in keywords if keyword in labels]


def inbox_list(*, mailbox: Mailbox, folder: str = "INBOX", page: int = 1, per_page: int = 50,
               starred_only: bool = False, unseen_only: bool = False, label_id: int | None = None) -> InboxPage:
    labels = _labels_by_keyword(mailbox)
    keyword = None
    if label_id is not None:
        keyword = next((k for k, label in labels.items() if label.pk == label_id), f"$label{label_id}")
    found = store_for(mailbox).list(folder, page=page, per_page=per_page, starred_only=starred_only,
                                    unseen_only=unseen_only, keyword=keyword)
    mailbox_session_touch(mailbox=mailbox)
    return InboxPage([InboxSummary(m, _label_ids(m.keywords, labels)) for m in found.messages], found.total,
                     found.page, found.per_page)


def inbox_search(*, mailbox: Mailbox, folder: str, query: str, limit: int) -> list[InboxSummary]:
    """Done by the store's server (IMAP SEARCH), newest first, at most `limit`."""
    labels = _labels_by_keyword(mailbox)
    found = store_for(mailbox).search(folder, query, limit=limit)
    mailbox_session_touch(mailbox=mailbox)
    return [InboxSummary(m, _label_ids(m.keywords, labels)) for m in found]


def inbox_message(*, mailbox: Mailbox, folder: str, uid: int, allow_remote_images: bool = False) -> InboxMessage:
    """Reading does not mark the message seen; message_update does."""
    stored = store_for(mailbox).fetch(folder, uid)
    message = read(stored.raw)
    html = sanitize_mail_html(message.html, allow_remote_images=allow_remote_images)
    return InboxMessage(uid=stored.uid, folder=stored.folder, seen=stored.seen, starred=stored.starred,
                        labels=_label_ids(stored.flags, _labels_by_keyword(mailbox)), size=len(stored.raw),
                        message=message, body_html=html.html, remote_images_blocked=html.remote_images_blocked)


def inbox_attachment(*, mailbox: Mailbox, folder: str, uid: int, index: int) -> tuple[Attachment, bytes]:
    stored = store_for(mailbox).fetch(folder, uid)
    found = attachment_payload(stored.raw, index)
    if found is None:
        raise MessageNotFound(f"message {uid} has no attachment {index}")
    return found


def inbox_folders(*, mailbox: Mailbox) -> list[Folder]:
    return store_for(mailbox).folders()


def message_delete(*, mailbox: Mailbox, folder: str, uid: int) -> None:
    """Permanent: the message is expunged, not moved to Trash."""
    store_for(mailbox).delete(folder, uid)


def message_update(
    *, mailbox: Mailbox, folder: str, uid: int, seen: bool | None = None, starred: bool | None = None,
    labels: list[int] | None = None, move_to: str | None = None,
) -> dict:
    """Apply flags and labels, then move if asked; returns where the message is now and its state."""
    account_labels = {label.pk: label for label in label_list(account=mailbox.account)}
    if labels is not None:
        unknown = [label_id for label_id in labels if label_id not in account_labels]
        if unknown:
            raise ValidationError({"labels": [f"no label with id {label_id}" for label_id in unknown]})
    store = store_for(mailbox)
    current = store.fetch(folder, uid)
    label_keywords = {label.keyword for label in account_labels.values()}
    add, remove = (), ()
    if labels is not None:
        wanted = {account_labels[label_id].keyword for label_id in labels}
        add = tuple(sorted(wanted - set(current.flags)))
        remove = tuple(sorted((label_keywords & set(current.flags)) - wanted))
    if seen is not None or starred is not None or add or remove:
        store.set_flags(folder, uid, seen=seen, starred=starred, add_keywords=add, remove_keywords=remove)
    if move_to and move_to != current.folder:
        uid = store.move(folder, uid, move_to)
        folder = move_to
    now = store.fetch(folder, uid)
    return {
        "uid": now.uid,
        "folder": now.folder,
        "seen": now.seen,
        "starred": now.starred,
        "labels": sorted(label.pk for label in account_labels.values() if label.keyword in now.flags),
    }
