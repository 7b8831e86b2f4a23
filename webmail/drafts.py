"""Drafts: a message being written in the webmail, kept as a MIME message in the mailbox's Drafts
folder (the folder with the \\Drafts special use), flagged \\Draft. Saving again replaces the
previous draft: the new one is appended first and the old UID deleted after, so a failure never
loses both. Sending a draft goes through mail_send (the hold queue of POST /mail/send) and removes
it; undoing the send cancels it in that queue and brings the draft back from what was queued."""
import base64
import email
import logging
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from mailcore.errors import InvalidFields
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.models import OutboundMessage
from mailcore.sanitize import sanitize_mail_html
from mailcore.sending.compose import header_problem, html_to_text, message_ids_problem, mime_type_problem
from mailcore.sending.failures import returned_draft_id
from mailcore.sending.inputs import AttachmentRequest, SendRequest
from mailcore.sending.models import SendFailure
from mailcore.sending.services import mail_send, scheduled_cancel
from mailcore.store.base import DEFAULT_FOLDERS, MessageNotFound, StoreError
from mailcore.store.factory import store_for
from mailcore.store.reading import Attachment, attachment_payload, header, parse, read

log = logging.getLogger(__name__)

DRAFTS_USE = "\\Drafts"
DRAFT_FLAGS = ("\\Draft", "\\Seen")
FOLDER_CACHE_SECONDS = 600
MAX_ADDRESS_FIELD = 4000

_DISPLAY_SPECIALS = re.compile(r'[,;:<>@"()\[\]\\.]')
_ENTRY = re.compile(r"(.*?)\s*<([^<>]*)>", re.DOTALL)


@dataclass(frozen=True)
class Composition:
    """A message being written: the address fields as typed ("Amy <amy@x.test>, bob@y.test"), the
    subject, the plain body or the rich one (HTML, sanitized whenever it is kept or sent), and the
    threading headers of a reply."""

    to: str = ""
    cc: str = ""
    bcc: str = ""
    subject: str = ""
    body_text: str = ""
    body_html: str = ""
    in_reply_to: str = ""
    references: str = ""

    @property
    def rich(self) -> bool:
        return bool(self.body_html.strip())


@dataclass(frozen=True)
class AttachmentFile:
    filename: str
    content_type: str
    content: bytes


@dataclass(frozen=True)
class OpenDraft:
    uid: int
    composition: Composition
    attachments: list[Attachment] = field(default_factory=list)  # indexes name them for "keep"


@dataclass(frozen=True)
class Undone:
    """A send taken back: what was queued, and the draft it is again (None when the draft could
    not be stored; `problem` then says why and the caller shows the composition instead)."""

    composition: Composition
    attachments: list[AttachmentFile]
    draft_uid: int | None
    problem: str = ""


# Addresses as typed ------------------------------------------------------------------------------

def split_addresses(text: str) -> list[tuple[str, str]]:
    """(display name, address) for each entry of an address field, split at commas, semicolons and
    line breaks outside quotes and angle brackets ("Doe, John" <j@x.test> keeps its comma). The
    entries are not checked here: mail_send says which are not addresses."""
    entries, current, quoted, angle = [], [], False, False
    for char in text:
        if char == '"' and not angle:
            quoted = not quoted
        elif char == "<" and not quoted:
            angle = True
        elif char == ">" and not quoted:
            angle = False
        if char in ",;\r\n" and not quoted and not angle:
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
    entries.append("".join(current))
    pairs = []
    for entry in (entry.strip() for entry in entries):
        if not entry:
            continue
        found = _ENTRY.fullmatch(entry)
        if found:
            pairs.append((found.group(1).strip().strip('"').strip(), found.group(2).strip()))
        else:
            pairs.append(("", entry))
    return pairs


def format_address(name: str, address: str) -> str:
    """"Name <address>", quoted when the name has a comma or another special character."""
    if not name:
        return address
    if _DISPLAY_SPECIALS.search(name):
        escaped = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}" <{address}>'
    return f"{name} <{address}>"


def addresses_of(text: str) -> list[str]:
    return [address for _, address in split_addresses(text)]


# Checking and building -------------------------------------------------------------------------

def clean_compose_html(html: str) -> str:
    """Rich text typed in the browser made safe to keep and send: the mail allowlist (no scripts,
    handlers, styles blocks or dangerous URLs). Remote images stay: they are the writer's own."""
    return sanitize_mail_html(html, allow_remote_images=True).html if html.strip() else ""


def _checked(mailbox: Mailbox, composition: Composition, attachments: list[AttachmentFile]) -> Composition:
    """The composition with its HTML sanitized, or InvalidFields naming the fields that cannot be
    headers (line breaks, control characters), bad threading ids and attachments over the cap."""
    errors: dict[str, list[str]] = {}
    for name in ("to", "cc", "bcc", "subject"):
        value = getattr(composition, name)
        if problem := header_problem(value):
            errors.setdefault(name, []).append(problem)
        elif name != "subject" and len(value) > MAX_ADDRESS_FIELD:
            errors.setdefault(name, []).append(f"at most {MAX_ADDRESS_FIELD} characters")
    if composition.in_reply_to and (problem := message_ids_problem(composition.in_reply_to, single=True)):
        errors.setdefault("in_reply_to", []).append(problem)
    if composition.references and (problem := message_ids_problem(composition.references, single=False)):
        errors.setdefault("references", []).append(problem)
    cap_mb = mailbox.effective_plan.attachment_max_mb
    total = sum(len(attachment.content) for attachment in attachments)
    if total > cap_mb * 1024 * 1024:
        errors.setdefault("attachments", []).append(
            f"attachments total {total / 1048576:.1f} MB; your plan allows {cap_mb} MB per message")
    for attachment in attachments:
        if problem := header_problem(attachment.filename):
            errors.setdefault("attachments", []).append(f"{attachment.filename!r}: the file name {problem}")
    if errors:
        raise InvalidFields(errors)
    return replace(composition, body_html=clean_compose_html(composition.body_html))


def attachment_file(filename: str, content_type: str, content: bytes) -> AttachmentFile:
    """An attachment with a usable name and MIME type (a browser's odd type becomes octet-stream)."""
    content_type = (content_type or "").split(";")[0].strip().lower()
    if not content_type or mime_type_problem(content_type):
        content_type = "application/octet-stream"
    filename = " ".join((filename or "attachment").split())[:200] or "attachment"
    return AttachmentFile(filename, content_type, content)


def _draft_bytes(mailbox: Mailbox, composition: Composition, attachments: list[AttachmentFile],
                 message_id: str = "") -> bytes:
    message = EmailMessage()
    local, _, domain = mailbox.address.partition("@")
    name = "" if header_problem(mailbox.display_name) else mailbox.display_name
    message["From"] = Address(display_name=name, username=local, domain=domain)
    for header_name, value in (("To", composition.to), ("Cc", composition.cc), ("Bcc", composition.bcc)):
        if value.strip():
            message[header_name] = value.strip()
    message["Subject"] = composition.subject
    message["Date"] = format_datetime(datetime.now().astimezone())
    if message_id:
        message["Message-ID"] = message_id
    if composition.in_reply_to:
        message["In-Reply-To"] = composition.in_reply_to
    if composition.references:
        message["References"] = composition.references
    message["MIME-Version"] = "1.0"
    if composition.rich:
        message.set_content(html_to_text(composition.body_html))
        message.add_alternative(composition.body_html, subtype="html")
    else:
        message.set_content(composition.body_text or "\n")
    for attachment in attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        message.add_attachment(attachment.content, maintype=maintype, subtype=subtype, filename=attachment.filename)
    return message.as_bytes(policy=message.policy.clone(linesep="\r\n"))


# The Drafts folder -------------------------------------------------------------------------------

def drafts_folder(*, mailbox: Mailbox) -> str:
    """The folder with the \\Drafts special use (looked up once in a while: every autosave needs it)."""
    key = f"webmail:drafts-folder:{mailbox.pk}"
    name = cache.get(key)
    if name is None:
        folders = store_for(mailbox).folders()
        name = next((found.name for found in folders if found.special_use == DRAFTS_USE), None)
        name = name or next(n for n, use in DEFAULT_FOLDERS.items() if use == DRAFTS_USE)
        cache.set(key, name, FOLDER_CACHE_SECONDS)
    return name


def _forget(mailbox: Mailbox, uid: int) -> None:
    """Delete a replaced or sent draft; one already gone (deleted elsewhere) is no error."""
    try:
        store_for(mailbox).delete(drafts_folder(mailbox=mailbox), uid)
    except MessageNotFound:
        pass


def _files(raw: bytes, indexes) -> list[AttachmentFile]:
    files = []
    for index in dict.fromkeys(indexes):
        found = attachment_payload(raw, index)
        if found is not None:
            files.append(attachment_file(found[0].filename, found[0].content_type, found[1]))
    return files


def attachments_gather(*, mailbox: Mailbox, draft_uid: int | None = None, keep=(),
                       forward: tuple[str, int] | None = None, forward_keep=(),
                       uploads: list[AttachmentFile] = ()) -> list[AttachmentFile]:
    """What a save or a send attaches: the kept attachments of the draft being replaced, those of a
    forwarded message picked before there was a draft, and the files uploaded with this request."""
    files: list[AttachmentFile] = []
    store = store_for(mailbox)
    if draft_uid and keep:
        try:
            files += _files(store.fetch(drafts_folder(mailbox=mailbox), draft_uid).raw, keep)
        except MessageNotFound:
            raise InvalidFields({"attachments": [
                "This draft was sent or deleted elsewhere, so its attachments are gone; attach them again."]}) from None
    if forward and forward_keep and not draft_uid:
        files += _files(store.fetch(*forward).raw, forward_keep)
    return files + list(uploads)


def draft_save(*, mailbox: Mailbox, composition: Composition, attachments: list[AttachmentFile],
               replaces: int | None = None, message_id: str = "") -> OpenDraft:
    """Store the draft (HTML sanitized) and delete the one it replaces; returns it with its UID in
    Drafts and its attachments' indexes. InvalidFields for what cannot be kept; StoreError
    (QuotaExceeded: the mailbox is full). `message_id` names the draft so a repeated save can find it."""
    composition = _checked(mailbox, composition, attachments)
    raw = _draft_bytes(mailbox, composition, attachments, message_id)
    uid = store_for(mailbox).append(drafts_folder(mailbox=mailbox), raw, flags=DRAFT_FLAGS)
    if replaces and replaces != uid:
        _forget(mailbox, replaces)
        # a returned send being corrected: its notice follows the draft
        SendFailure.objects.filter(mailbox=mailbox, draft_uid=replaces).update(draft_uid=uid)
    return OpenDraft(uid, composition, read(raw).attachments)


def draft_open(*, mailbox: Mailbox, uid: int) -> OpenDraft:
    """A draft from the Drafts folder as the compose form shows it (MessageNotFound when gone)."""
    stored = store_for(mailbox).fetch(drafts_folder(mailbox=mailbox), uid)
    message, parsed = read(stored.raw), parse(stored.raw)
    composition = Composition(
        to=header(parsed, "To"), cc=header(parsed, "Cc"), bcc=header(parsed, "Bcc"), subject=message.subject,
        body_text=message.text.replace("\r\n", "\n"), body_html=clean_compose_html(message.html).strip(),
        in_reply_to=message.in_reply_to or "",
        references=message.references)
    return OpenDraft(stored.uid, composition, message.attachments)


def draft_discard(*, mailbox: Mailbox, uid: int) -> None:
    _forget(mailbox, uid)


# Sending and taking it back ----------------------------------------------------------------------

def draft_send(*, mailbox: Mailbox, composition: Composition, attachments: list[AttachmentFile],
               draft_uid: int | None = None, unsend_window: int = 0,
               scheduled_at: datetime | None = None) -> OutboundMessage:
    """Send through mail_send (quota, checks, the hold queue), from the mailbox with its identity;
    the draft is removed once the send is accepted. Raises what mail_send raises (InvalidFields,
    SendQuotaExceeded, MailboxLocked), and InvalidFields for what a draft could not hold."""
    composition = _checked(mailbox, composition, attachments)
    rich = composition.rich
    if rich and not html_to_text(composition.body_html).strip() and "<img" not in composition.body_html:
        composition = replace(composition, body_html="")  # an empty editor is no message: mail_send says so
    request = SendRequest(
        from_email=mailbox.address,
        to=addresses_of(composition.to), cc=addresses_of(composition.cc), bcc=addresses_of(composition.bcc),
        subject=composition.subject,
        body_html=composition.body_html if rich else "",
        body_text="" if rich else composition.body_text,
        attachments=[AttachmentRequest(a.filename, base64.b64encode(a.content).decode("ascii"), a.content_type)
                     for a in attachments],
        unsend_window=unsend_window or None,
        scheduled_at=scheduled_at,
        in_reply_to=composition.in_reply_to,
        references=composition.references,
        written_in_webmail=True,
    )
    message = mail_send(account=mailbox.account, user=None, request=request)
    if draft_uid:
        SendFailure.objects.filter(mailbox=mailbox, draft_uid=draft_uid, dismissed_at__isnull=True).update(
            dismissed_at=timezone.now())  # a returned send sent again: its notice has done its work
        try:
            _forget(mailbox, draft_uid)
        except StoreError:  # the send stands; the draft stays behind for the owner to delete
            log.warning("draft %s of %s not removed after sending", draft_uid, mailbox.address, exc_info=True)
    return message


def sent_message_get(*, mailbox: Mailbox, scheduled_id: int) -> OutboundMessage:
    """A send of this mailbox (OutboundMessage.DoesNotExist for anyone else's)."""
    return OutboundMessage.objects.get(mailbox=mailbox, pk=scheduled_id)


def composition_of(payload: dict) -> Composition:
    return Composition(to=", ".join(payload["to"]), cc=", ".join(payload.get("cc", [])),
                       bcc=", ".join(payload.get("bcc", [])), subject=payload.get("subject", ""),
                       body_text=payload.get("body_text", ""), body_html=payload.get("body_html", ""),
                       in_reply_to=payload.get("in_reply_to", ""), references=payload.get("references", ""))


def send_undo(*, mailbox: Mailbox, scheduled_id: int) -> Undone:
    """Cancel a held send (undo window or send-later) through scheduled_cancel and make it a draft
    again. OutboundMessage.DoesNotExist: not this mailbox's, or already on its way (too late)."""
    with transaction.atomic():
        message = sent_message_get(mailbox=mailbox, scheduled_id=scheduled_id)
        scheduled_cancel(account=mailbox.account, scheduled_id=message.pk)
    composition = composition_of(message.payload)
    files = [attachment_file(a["filename"], a["content_type"], base64.b64decode(a["content_base64"]))
             for a in message.payload.get("attachments", [])]
    try:
        uid = draft_save(mailbox=mailbox, composition=composition, attachments=files).uid
    except (StoreError, InvalidFields) as exc:
        problem = exc.detail
        return Undone(composition, files, None, problem)
    return Undone(composition, files, uid)


def failed_send_keep_draft(*, failure: SendFailure) -> int:
    """The UID of a failed send's copy in Drafts (mailcore.sending.failures asks), kept there once: a worker killed after the
    append but before draft_uid was written finds it by its Message-ID instead of appending again.
    0 for a send the draft form cannot hold (a template's send: the bounce carries it)."""
    message, mailbox = failure.message, failure.mailbox
    message_id = returned_draft_id(message)
    store = store_for(mailbox)
    folder = drafts_folder(mailbox=mailbox)
    for kept in store.related(folder, [message_id]):
        head = email.message_from_bytes(store.fetch(folder, kept.uid).raw.split(b"\r\n\r\n", 1)[0])
        if (head.get("Message-ID") or "").strip() == message_id:
            return kept.uid
    files = [attachment_file(a["filename"], a["content_type"], base64.b64decode(a["content_base64"]))
             for a in message.payload.get("attachments", [])]
    try:
        return draft_save(mailbox=mailbox, composition=composition_of(message.payload), attachments=files,
                          message_id=message_id).uid
    except InvalidFields:
        return 0
