"""What email.received says about a message, read from its raw bytes; never raises on bad mail.

The message is read as mailcore.store.reading reads it (policy.default, its header helpers, its
rules for text, HTML and attachments), so the event and the inbox listing agree (has_attachments,
from, subject); but only what the event needs is read, and with a parser that remembers the
headers it has parsed (see _RememberingPolicy): reading.read() took two thirds of the listener's
time for a message.
"""
import hashlib
import html
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import EmailPolicy
from functools import lru_cache

import nh3

from mailcore.store.reading import addresses, header, message_ids

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


class _RememberingPolicy(EmailPolicy):
    """policy.default, remembering the header objects it makes: while reading a message the parser
    asks for each part's Content-Type a dozen times (boundary, maintype, charset...), and
    policy.default parses the header anew each time. A header object is immutable, so one parse of
    a given value serves every later ask, in any message and any thread."""

    def header_fetch_parse(self, name, value):
        if hasattr(value, "name"):  # as EmailPolicy: already a header object
            return value
        return _parsed_header(self.header_factory, name, "".join(_LINE_BREAK.split(value)))


_LINE_BREAK = re.compile(r"\n|\r")  # EmailPolicy's own (str.splitlines would split on more)
_parser = BytesParser(policy=_RememberingPolicy())


@lru_cache(maxsize=1024)
def _parsed_header(factory, name: str, value: str):
    return factory(name, value)


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
    """reading.read() for the fields inbound uses, by the same rules: the first text/plain and
    text/html leaves are the bodies; a leaf is an attachment when its disposition says so or it
    has a file name and is not text; an attachment marked inline (a logo) does not count."""
    message = _parser.parsebytes(raw)
    text, html_part, has_attachments = "", None, False
    for part in _leaves(message):
        content_type = part.get_content_type()
        disposition = part.get_content_disposition()
        if disposition == "attachment" or (part.get_filename() and content_type not in {"text/plain", "text/html"}):
            has_attachments = has_attachments or disposition != "inline"
        elif content_type == "text/plain" and not text:
            text = _part_text(part)
        elif content_type == "text/html" and html_part is None:
            html_part = part
    return InboundRead(
        message_id=header(message, "Message-ID"),
        from_=", ".join(addresses(message, "From")) or header(message, "From"),
        subject=header(message, "Subject"),
        in_reply_to=header(message, "In-Reply-To") or None,
        references=header(message, "References"),
        text=text,
        html=_part_text(html_part) if html_part is not None and not text.strip() else "",
        has_attachments=has_attachments,
        content_type=message.get_content_type(),
    )


def _leaves(part: EmailMessage):
    """The parts that are not multipart containers, in order (an attached message is not entered)."""
    if part.is_multipart():
        for inner in part.iter_parts():
            yield from _leaves(inner)
    else:
        yield part


def _part_text(part: EmailMessage) -> str:
    try:
        return part.get_content()
    except Exception:
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", errors="replace")


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
