"""What email.received says about a message, read from its raw bytes; never raises on bad mail.

Header decoding, bodies and attachments come from mailcore.store.reading, so the event and the
inbox listing agree (has_attachments, from, subject).
"""
import hashlib
import html
import re
from dataclasses import dataclass

import nh3

from mailcore.store.reading import ReadMessage, message_ids, read

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
    return "".join(char for char in text if char.isprintable() or char.isspace())


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


def _empty() -> ReadMessage:
    return ReadMessage(message_id="", subject="", from_="", to=[], cc=[], reply_to=[], date=None,
                       in_reply_to=None, references="", headers=[], text="", html="", content_type="")


def read_or_empty(raw: bytes) -> ReadMessage:
    """The message read once for everything inbound needs; never raises on bad mail."""
    try:
        return read(raw, headers=False)  # inbound needs none of the other headers
    except Exception:  # the reader guards headers and parts; this is the last line for anything it missed
        return _empty()


def summarise(message: ReadMessage) -> InboundSummary:
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
