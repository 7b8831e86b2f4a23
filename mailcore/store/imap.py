"""The `imap` mail store: one mailbox on an IMAP server (Dovecot through the master user, or a provider's)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from datetime import datetime

from django.conf import settings
from django.db import connection
from imapclient import IMAPClient
from imapclient.exceptions import IMAPClientAbortError, IMAPClientError, LoginError
from imapclient.response_types import Envelope

from mailcore.paging import page_window
from mailcore.netsafety import Deadline
from mailcore.remotemail import ProviderError, ResponseTooLarge, imap_open
from mailcore.store.base import (
    DEFAULT_FOLDERS,
    FLAGGED,
    SEEN,
    Criteria,
    Delivered,
    DeliveryRefused,
    Folder,
    FolderNotFound,
    MessageNotFound,
    MessagePage,
    MessageSummary,
    StoredMessage,
    StoreError,
    StoreUnavailable,
    trace_headers,
    validate_folder,
    validate_keyword,
    validate_new_folder,
    validate_sort,
    validate_uid,
    with_headers,
)
from mailcore.store.reading import header_name, header_values_in
from mailcore.store.imap_pool import _ALONGSIDE, _POOL, _logout, _session_slot, _unselected
from mailcore.store.imap_wire import (
    _APPENDUID,
    _COPYUID,
    _SAFE_ID,
    _address,
    _error,
    _fetch_summaries,
    _flags,
    _has_attachments,
    _list_with_status,
    _search_keys,
    _text,
    _utc,
)
from mailcore.store.lmtp import lmtp_deliver_many

SPECIAL_USES = {"\\All", "\\Archive", "\\Drafts", "\\Flagged", "\\Junk", "\\Sent", "\\Trash"}


class ImapStore:
    """A managed mailbox's operations reuse a logged-in connection from a small per-process pool (one
    login serves many requests, as a mail client keeps its connection); writes that add mail (append,
    move) and connected mailboxes (another provider's connection limits) open their own and log out.
    Folder names and UIDs are checked before they reach an IMAP command; server answers become the
    store's exceptions."""

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

    def header_values(self, folder: str, uids: list[int], name: str) -> dict[int, list[str]]:
        item = f"HEADER.FIELDS ({header_name(name).upper()})"
        wanted = [validate_uid(uid) for uid in uids]
        if not wanted:
            return {}
        with self._session() as client:
            self._select(client, folder, readonly=True)
            found = client.fetch(wanted, [f"BODY.PEEK[{item}]".encode()])
        return {uid: header_values_in(data.get(f"BODY[{item}]".encode()) or b"", name)
                for uid, data in found.items() if uid in wanted}

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
