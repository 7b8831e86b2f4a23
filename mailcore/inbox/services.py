"""A mailbox's messages as every interface shows them (REST, MCP, webmail): paged lists with label
ids, one message with sanitized HTML and attachment references, search, folders, and changes
(flags, labels, folder, delete). Listing and searching a connected mailbox record a successful use
(its "cached IMAP session"). Interfaces only add what is theirs, such as the URL an attachment is fetched at."""
from collections.abc import Callable
from dataclasses import dataclass

from mailcore.errors import InvalidFields
from mailcore.inbox.connected import mailbox_session_touch
from mailcore.mailboxes.models import Label, Mailbox
from mailcore.mailboxes.selectors import labels_for_mailbox
from mailcore.sanitize import sanitize_mail_html
from mailcore.store.authresults import HEADER as AUTHENTICATION_RESULTS
from mailcore.store.authresults import authentication_summary
from mailcore.store.base import Criteria, Folder, MessageNotFound, MessageSummary, ThreadMember
from mailcore.store.factory import store_for
from mailcore.store.reading import Attachment, ReadMessage, attachment_payload, message_ids, read

# Where a conversation's messages are looked for besides the open folder (Junk and Trash are not).
CONVERSATION_FOLDERS = ("INBOX", "Sent", "Archive")


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


def _labels_by_keyword(mailbox: Mailbox, labels: list[Label] | None = None) -> dict[str, Label]:
    return {label.keyword: label for label in (labels_for_mailbox(mailbox=mailbox) if labels is None else labels)}


def _label_ids(keywords, labels: dict[str, Label]) -> list[int]:
    return [labels[keyword].pk for keyword in keywords if keyword in labels]


def inbox_list(*, mailbox: Mailbox, folder: str = "INBOX", page: int = 1, per_page: int = 50,
               starred_only: bool = False, unseen_only: bool = False, label_id: int | None = None,
               criteria: Criteria | None = None, sort: str = "arrival", reverse: bool = True,
               labels: list[Label] | None = None) -> InboxPage:
    """One page of a folder, sorted and searched by the store's server (IMAP SORT and SEARCH).
    `labels`: the mailbox's labels when the caller has read them already (labels_for_mailbox)."""
    labels = _labels_by_keyword(mailbox, labels)
    keyword = None
    if label_id is not None:
        keyword = next((k for k, label in labels.items() if label.pk == label_id), f"$label{label_id}")
    found = store_for(mailbox).list(folder, page=page, per_page=per_page, starred_only=starred_only,
                                    unseen_only=unseen_only, keyword=keyword, criteria=criteria, sort=sort,
                                    reverse=reverse)
    mailbox_session_touch(mailbox=mailbox)
    return InboxPage([InboxSummary(m, _label_ids(m.keywords, labels)) for m in found.messages], found.total,
                     found.page, found.per_page)


def inbox_search(*, mailbox: Mailbox, folder: str, query: str, limit: int) -> list[InboxSummary]:
    """Done by the store's server (IMAP SEARCH), newest first, at most `limit`."""
    labels = _labels_by_keyword(mailbox)
    found = store_for(mailbox).search(folder, query, limit=limit)
    mailbox_session_touch(mailbox=mailbox)
    return [InboxSummary(m, _label_ids(m.keywords, labels)) for m in found]


def inbox_authentication(*, mailbox: Mailbox, folder: str, uids: list[int]) -> dict[int, dict[str, str] | None]:
    """Each message's {spf, dkim, dmarc, arc} from our Authentication-Results (None without one, or
    for a UID gone), with one store call for them all: only the messages' heads are read."""
    found = store_for(mailbox).header_values(folder, uids, AUTHENTICATION_RESULTS) if uids else {}
    return {uid: authentication_summary(found.get(uid, ())) for uid in uids}


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


def inbox_folders_started(*, mailbox: Mailbox) -> Callable[[], list[Folder]]:
    """inbox_folders() begun now, beside the caller's own store work where the store can (the IMAP
    store reads them on a second connection); call the result for them. Other stores read them
    when called: the embedded store's reads are queries on the caller's database connection."""
    store = store_for(mailbox)
    started = getattr(store, "folders_started", None)
    return started() if started is not None else store.folders


def message_delete(*, mailbox: Mailbox, folder: str, uid: int) -> None:
    """Permanent: the message is expunged, not moved to Trash."""
    store_for(mailbox).delete(folder, uid)


def message_update(
    *, mailbox: Mailbox, folder: str, uid: int, seen: bool | None = None, starred: bool | None = None,
    labels: list[int] | None = None, move_to: str | None = None,
) -> dict:
    """Apply flags and labels, then move if asked; returns where the message is now and its state."""
    account_labels = {label.pk: label for label in labels_for_mailbox(mailbox=mailbox)}
    if labels is not None:
        unknown = [label_id for label_id in labels if label_id not in account_labels]
        if unknown:
            raise InvalidFields({"labels": [f"no label with id {label_id}" for label_id in unknown]})
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


def inbox_uids(*, mailbox: Mailbox, folder: str, criteria: Criteria | None = None) -> list[int]:
    """Every message matching, for an action on "all matching the search"."""
    return store_for(mailbox).uids(folder, criteria)


def folder_create(*, mailbox: Mailbox, name: str) -> None:
    store_for(mailbox).create_folder(name)


def folder_rename(*, mailbox: Mailbox, name: str, new_name: str) -> None:
    store_for(mailbox).rename_folder(name, new_name)


def folder_delete(*, mailbox: Mailbox, name: str) -> None:
    """With the messages in it; the default folders stay."""
    store_for(mailbox).delete_folder(name)


def messages_update_many(
    *, mailbox: Mailbox, folder: str, uids: list[int], seen: bool | None = None, starred: bool | None = None,
    add_labels: list[int] = (), remove_labels: list[int] = (), move_to: str | None = None, delete: bool = False,
) -> int:
    """One action on many messages (the webmail's bulk actions). Delete moves to Trash; in Trash it
    is permanent. Returns how many messages were asked for."""
    account_labels = {label.pk: label for label in labels_for_mailbox(mailbox=mailbox)}
    unknown = [label_id for label_id in [*add_labels, *remove_labels] if label_id not in account_labels]
    if unknown:
        raise InvalidFields({"labels": [f"no label with id {label_id}" for label_id in unknown]})
    if not uids:
        return 0
    store = store_for(mailbox)
    add = tuple(account_labels[label_id].keyword for label_id in add_labels)
    remove = tuple(account_labels[label_id].keyword for label_id in remove_labels)
    if seen is not None or starred is not None or add or remove:
        store.set_flags_many(folder, uids, seen=seen, starred=starred, add_keywords=add, remove_keywords=remove)
    if delete:
        trash = _folder_with_use(mailbox, "\\Trash")
        if trash is None or trash == folder:
            store.delete_many(folder, uids)
        else:
            store.move_many(folder, uids, trash)
    elif move_to and move_to != folder:
        store.move_many(folder, uids, move_to)
    return len(uids)


def _folder_with_use(mailbox: Mailbox, special_use: str) -> str | None:
    return next((found.name for found in inbox_folders(mailbox=mailbox) if found.special_use == special_use), None)


def inbox_conversation(*, mailbox: Mailbox, folder: str, uid: int) -> list[ThreadMember]:
    """The message and its conversation, oldest first, from the open folder, the Inbox, Sent and
    Archive: messages joined through Message-ID, In-Reply-To and References, each found by the
    store's server. Our own replies (kept in Sent) belong to it."""
    store = store_for(mailbox)
    stored = store.fetch(folder, uid)
    opened = read(stored.raw)
    ids = message_ids(opened.references) + message_ids(opened.in_reply_to) + message_ids(opened.message_id)
    members: dict[tuple[str, int], ThreadMember] = {}
    existing = {found.name for found in store.folders()}
    for name in dict.fromkeys([folder, *CONVERSATION_FOLDERS]):
        if name in existing:
            for summary in store.related(name, ids):
                members[(name, summary.uid)] = ThreadMember(name, summary)
    if (folder, uid) not in members:  # a message without a Message-ID is a conversation of one
        members[(folder, uid)] = ThreadMember(folder, MessageSummary(
            uid=uid, subject=opened.subject, from_=opened.from_, date=opened.date, seen=stored.seen,
            starred=stored.starred, has_attachments=opened.has_attachments, size=len(stored.raw)))
    return sorted(members.values(), key=lambda member: (member.summary.date is None, member.summary.date or 0,
                                                         member.summary.uid))
