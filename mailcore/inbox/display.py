"""What the webmail shows of a message beyond inbox_message: the sanitized HTML as a whole
document for a sandboxed frame (inline `cid:` images as data: URLs from the message's own parts,
tracking pixels removed, links opening in a new tab, remote images only with the reader's
consent), plain text with its links made clickable, and the attachments left to download.

Consent itself is the caller's (the webmail keeps it per sender): `images_once` for this view,
`images_always(sender)` for a sender the owner always shows images from."""
import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import getaddresses
from html import escape

from django.utils.safestring import SafeString, mark_safe

from mailcore.inbox.services import InboxMessage, inbox_message
from mailcore.mailboxes.models import Mailbox
from mailcore.sanitize import LINK_REL, sanitize_mail_html
from mailcore.store.factory import store_for
from mailcore.store.reading import Attachment, parse

# Inline images travel inside the frame's document (a sandboxed frame has no origin to fetch
# them from): raster types only, checked by their first bytes, and capped so one message
# cannot make a page of many megabytes.
INLINE_IMAGE_SIGNATURES = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # and "WEBP" at offset 8, checked below
}
INLINE_IMAGE_MAX_BYTES = 2 * 1024 * 1024
INLINE_IMAGES_MAX_BYTES = 8 * 1024 * 1024

# Links in plain text: http(s) and mailto only (bare addresses become mailto links). Bounded
# repetitions keep the scan linear on hostile input.
_TEXT_LINK = re.compile(
    r"(?P<url>\bhttps?://[^\s<>\"'`\x00-\x1f]{1,2048})"
    r"|(?P<mailto>\bmailto:[^\s<>\"'`\x00-\x1f]{1,512})"
    r"|(?P<email>(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b)",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?)]}'\""

# The frame's document. Its own CSP narrows what the page's allows (a page showing several
# messages cannot widen one message's images by another's consent); the sanitizer lets no
# <meta> or <style> of the message through, so these are the only ones.
_FRAME_STYLE = (
    "html{color-scheme:light}"
    "body{margin:0;padding:12px 16px;font:15px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:#1d2939;background:#fff;overflow-wrap:anywhere}"
    "img{max-width:100%;height:auto}table{max-width:100%}pre{white-space:pre-wrap}a{color:#1849a9}"
    "blockquote{margin:0 0 0 .5em;padding-left:.8em;border-left:3px solid #d0d5dd;color:#475467}"
)


def frame_policy(*, remote_images: bool) -> str:
    images = "data: https:" if remote_images else "data:"
    return (f"default-src 'none'; img-src {images}; style-src 'unsafe-inline'; font-src 'none'; "
            "form-action 'none'; base-uri 'none'")


def frame_document(body: str, *, remote_images: bool) -> str:
    return ('<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{frame_policy(remote_images=remote_images)}">'
            '<meta name="referrer" content="no-referrer">'
            f"<style>{_FRAME_STYLE}</style></head><body>{body}</body></html>")


@dataclass(frozen=True)
class DisplayedMessage:
    """One message ready for the webmail's page (or a conversation's)."""

    found: InboxMessage  # flags, labels, headers and bodies as the inbox service read them
    sender: str  # the From address, lowercase ("" when there is none)
    frame_html: str  # the whole document for <iframe sandbox srcdoc>; "" for a plain-text message
    text_html: SafeString  # the plain text, escaped, links made clickable (when there is no HTML)
    remote_images: int  # remote images in the message besides trackers
    remote_images_shown: bool  # the reader allowed them (once or always for this sender)
    images_once: bool
    images_always: bool
    trackers_removed: int
    attachments: list[Attachment] = field(default_factory=list)  # those not shown inline

    @property
    def folder(self) -> str:
        return self.found.folder

    @property
    def uid(self) -> int:
        return self.found.uid

    @property
    def message(self):
        return self.found.message

    @property
    def remote_images_blocked(self) -> bool:
        return bool(self.remote_images) and not self.remote_images_shown


def sender_address(from_header: str) -> str:
    found = [address for _, address in getaddresses([from_header or ""]) if "@" in address]
    return found[0].strip().lower() if found else ""


def linkify(text: str) -> SafeString:
    """Escape first, then make http(s) and mailto links (and bare addresses) clickable."""
    pieces, position = [], 0
    for match in _TEXT_LINK.finditer(text or ""):
        found = match.group(0)
        while found and found[-1] in _TRAILING:
            if found[-1] == ")" and found.count("(") >= found.count(")"):
                break
            found = found[:-1]
        if not found or found.lower() in {"http://", "https://", "mailto:"}:
            continue
        href = f"mailto:{found}" if match.group("email") else found
        attributes = "" if href.lower().startswith("mailto:") else f' target="_blank" rel="{LINK_REL}"'
        pieces += [escape(text[position:match.start()]), f'<a href="{escape(href)}"{attributes}>{escape(found)}</a>']
        position = match.start() + len(found)
    pieces.append(escape((text or "")[position:]))
    return mark_safe("".join(pieces))  # noqa: S308 - every piece above is escaped


def _leaves(message: EmailMessage):
    """Leaf parts in the order mailcore.store.reading numbers them (attachment indexes)."""
    if message.is_multipart():
        for part in message.iter_parts():
            yield from _leaves(part)
    else:
        yield message


def inline_parts(raw: bytes) -> dict[str, tuple[int, EmailMessage]]:
    """Parts with a Content-ID, by id without its angle brackets: (leaf index, part)."""
    found = {}
    for index, part in enumerate(_leaves(parse(raw))):
        content_id = str(part.get("Content-ID") or "").strip().strip("<>").strip()
        if content_id and content_id not in found:
            found[content_id] = (index, part)
    return found


def image_data_url(part: EmailMessage, *, limit: int) -> str | None:
    """A raster image part as a data: URL, typed by what its bytes are; None for anything else."""
    declared = part.get_content_type()
    if declared not in INLINE_IMAGE_SIGNATURES:
        return None
    payload = part.get_payload(decode=True) or b""
    if not payload or len(payload) > limit:
        return None
    for content_type, signatures in INLINE_IMAGE_SIGNATURES.items():
        if payload.startswith(signatures) and (content_type != "image/webp" or payload[8:12] == b"WEBP"):
            return f"data:{content_type};base64,{base64.b64encode(payload).decode('ascii')}"
    return None


def message_display(*, mailbox: Mailbox, folder: str, uid: int, images_once: bool = False,
                    images_always: Callable[[str], bool] = lambda sender: False) -> DisplayedMessage:
    """Reading does not mark the message seen (the caller does, through message_update)."""
    found = inbox_message(mailbox=mailbox, folder=folder, uid=uid)
    message = found.message
    sender = sender_address(message.from_)
    always = bool(sender) and images_always(sender)
    allowed = images_once or always
    frame_html, text_html, remote, trackers, shown_inline = "", mark_safe(""), 0, 0, set()
    if message.html:
        parts = {}
        if "cid:" in message.html.lower():
            parts = inline_parts(store_for(mailbox).fetch(found.folder, found.uid).raw)
        budget, made = [INLINE_IMAGES_MAX_BYTES], {}

        def inline(content_id: str) -> str | None:
            entry = parts.get(content_id) or next(
                (value for key, value in parts.items() if key.lower() == content_id.lower()), None)
            if entry is None:
                return None
            index, part = entry
            if index not in made:  # an image used twice is encoded (and counted) once
                made[index] = image_data_url(part, limit=min(INLINE_IMAGE_MAX_BYTES, budget[0]))
                if made[index]:
                    budget[0] -= len(part.get_payload(decode=True) or b"")
                    shown_inline.add(index)
            return made[index]

        clean = sanitize_mail_html(message.html, allow_remote_images=allowed, for_frame=True, inline_image=inline)
        remote, trackers = clean.remote_images, clean.trackers_removed
        frame_html = frame_document(clean.html, remote_images=allowed and bool(remote))
    else:
        text_html = linkify(message.text)
    return DisplayedMessage(
        found=found, sender=sender, frame_html=frame_html, text_html=text_html, remote_images=remote,
        remote_images_shown=allowed and bool(remote), images_once=images_once, images_always=always,
        trackers_removed=trackers,
        attachments=[attachment for attachment in message.attachments if attachment.index not in shown_inline])


def message_source(*, mailbox: Mailbox, folder: str, uid: int) -> bytes:
    """The message as it was stored ("view original")."""
    return store_for(mailbox).fetch(folder, uid).raw
