"""What email.received says about a message, read from its raw bytes; never raises on bad mail.

The message is read as mailcore.store.reading reads it (its parser, header helpers and rules for
text, HTML and attachments), so the event and the inbox listing agree (has_attachments, from,
subject); but only what the event needs is read.
"""
import hashlib
import html
import re
from dataclasses import dataclass

import nh3

from mailcore.store.reading import addresses, header, is_attachment, leaves, message_ids, parse, part_text

PREVIEW_CHARS = 200
# Block-level tags end a run of text: a space before each keeps "<p>a</p><p>b</p>" from reading "ab".
_BLOCK_TAG = re.compile(r"<(?=/?(?:p|div|br|li|tr|td|th|h[1-6]|table|blockquote|hr|section|article)\b)", re.IGNORECASE)
_DROP_WITH_CONTENT = {"script", "style", "title", "head"}


@dataclass(frozen=True)
class InboundSummary:
    message_id: str  # "" when the message has none
    from_: str
    subject: str
    in_reply_to: str | None
    references: str
    preview: str
    has_attachments: bool


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _printable(text: str) -> str:
    """The text without its control characters (whitespace stays)."""
    if text.isascii():  # the common case, in one pass of the regex engine instead of one Python step a character
        return _ASCII_CONTROL.sub("", text)
    return "".join(char for char in text if char.isprintable() or char.isspace())


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")  # the ASCII characters neither printable nor space


def preview_text(*, text: str, html_body: str, limit: int = PREVIEW_CHARS) -> str:
    """The start of the text body, else of the HTML body with its tags (and scripts, styles) removed."""
    if text.strip():
        plain = text
    else:
        spaced = _BLOCK_TAG.sub(" <", html_body or "")
        plain = html.unescape(nh3.clean(spaced, tags=set(), clean_content_tags=_DROP_WITH_CONTENT))
    return _start(plain, limit).rstrip()


def _start(plain: str, limit: int) -> str:
    """The first `limit` characters of the collapsed, printable text, reading only as much as that
    needs: the collapsed form of a prefix is a prefix of the collapsed whole."""
    length = 4 * limit
    while True:
        collapsed = _collapse(_printable(plain[:length]))
        if len(collapsed) > limit or length >= len(plain):
            return collapsed[:limit]
        length *= 2


@dataclass(frozen=True)
class InboundRead:
    """What inbound reads of a message, once for all its recipients."""

    message_id: str
    from_: str
    subject: str
    in_reply_to: str | None
    references: str
    text: str  # the first text/plain part
    html: str  # the first text/html part, read only when the text is empty (the preview's fallback)
    has_attachments: bool
    content_type: str  # of the message itself (multipart/report for bounces)


def _empty() -> InboundRead:
    return InboundRead(message_id="", from_="", subject="", in_reply_to=None, references="", text="", html="",
                       has_attachments=False, content_type="")


def read_or_empty(raw: bytes) -> InboundRead:
    """The message read once for everything inbound needs; never raises on bad mail."""
    try:
        return _read(raw)
    except Exception:  # reading's helpers guard headers and parts; this is the last line for anything they miss
        return _empty()


def _read(raw: bytes) -> InboundRead:
    """reading.read() for the fields inbound uses, by its rules (reading.leaves, is_attachment,
    part_text): attachments are only noticed, not decoded, and the HTML body only read when the
    text is empty (the preview's fallback)."""
    message = parse(raw)
    text, html_part, has_attachments = "", None, False
    for part in leaves(message):
        content_type = part.get_content_type()
        disposition = part.get_content_disposition()
        if is_attachment(part, content_type, disposition):
            has_attachments = has_attachments or disposition != "inline"
        elif content_type == "text/plain" and not text:
            text = part_text(part)
        elif content_type == "text/html" and html_part is None:
            html_part = part
    return InboundRead(
        message_id=header(message, "Message-ID"),
        from_=", ".join(addresses(message, "From")) or header(message, "From"),
        subject=header(message, "Subject"),
        in_reply_to=header(message, "In-Reply-To") or None,
        references=header(message, "References"),
        text=text,
        html=part_text(html_part) if html_part is not None and not text.strip() else "",
        has_attachments=has_attachments,
        content_type=message.get_content_type(),
    )


def summarise(message: InboundRead) -> InboundSummary:
    ids = message_ids(message.message_id)
    return InboundSummary(
        message_id=ids[0] if ids else "",
        from_=message.from_,
        subject=message.subject,
        in_reply_to=_collapse(message.in_reply_to or "") or None,
        references=_collapse(message.references),
        preview=preview_text(text=message.text, html_body=message.html),
        has_attachments=message.has_attachments,
    )


def fallback_message_id(raw: bytes, host: str) -> str:
    """A Message-ID for mail that arrived without one: derived from the content, so a retry gets the same."""
    return f"<{hashlib.sha256(raw).hexdigest()[:32]}@{host}>"
