"""Starting a reply, a reply to all or a forward from a stored message: recipients (never the
mailbox's own addresses), the subject with Re:/Fwd: once, the quoted original ("On <date>, <sender>
wrote:"), the threading headers (In-Reply-To, References) and, for a forward, its attachments."""
import html
import re
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import getaddresses

from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import is_own_address, own_addresses
from mailcore.sanitize import sanitize_mail_html
from mailcore.sending.compose import MAX_REFERENCES_LENGTH, MSG_ID, html_to_text
from webmail.drafts import Composition, format_address
from mailcore.store.factory import store_for
from mailcore.store.reading import Attachment, ReadMessage, message_ids, parse, read

REPLY, REPLY_ALL, FORWARD = "reply", "reply_all", "forward"
MODES = (REPLY, REPLY_ALL, FORWARD)
MAX_REFERENCES = 20  # RFC 5322 3.6.4 allows trimming; the first id and the latest ones are kept

_REPLY_PREFIX = re.compile(r"^\s*(re|aw|sv|antw)(\[\d+\])?\s*:", re.IGNORECASE)
_FORWARD_PREFIX = re.compile(r"^\s*(fwd?|wg|tr)\s*:", re.IGNORECASE)


@dataclass(frozen=True)
class Started:
    """A composition begun from a message; `rich` when the original had HTML (the editor quotes it
    as HTML, the plain form as text); `attachments` are the original's, offered with a forward."""

    composition: Composition
    rich: bool
    source: tuple[str, int]
    attachments: list[Attachment] = field(default_factory=list)


def reply_subject(subject: str) -> str:
    subject = " ".join(subject.split())
    return subject if _REPLY_PREFIX.match(subject) else f"Re: {subject}".rstrip()


def forward_subject(subject: str) -> str:
    subject = " ".join(subject.split())
    return subject if _FORWARD_PREFIX.match(subject) else f"Fwd: {subject}".rstrip()


def _pairs(parsed, name: str) -> list[tuple[str, str]]:
    try:
        values = [str(value) for value in parsed.get_all(name, [])]
    except Exception:  # a header too broken to read adds no one
        return []
    return [(display, address) for display, address in getaddresses(values) if "@" in address]


def _join(pairs: list[tuple[str, str]], own: set[str], seen: set[str]) -> str:
    kept = []
    for display, address in pairs:
        if is_own_address(address, own) or address.lower() in seen:
            continue
        seen.add(address.lower())
        kept.append(format_address(display, address))
    return ", ".join(kept)


def _references(original: ReadMessage) -> str:
    chain = message_ids(original.references) or message_ids(original.in_reply_to)[:1]
    chain = [value for value in dict.fromkeys([*chain, *message_ids(original.message_id)]) if MSG_ID.fullmatch(value)]
    if len(chain) > MAX_REFERENCES:
        chain = chain[:1] + chain[-(MAX_REFERENCES - 1):]
    while chain and len(" ".join(chain)) > MAX_REFERENCES_LENGTH:
        chain = chain[:1] + chain[2:] if len(chain) > 2 else chain[1:]
    return " ".join(chain)


def _when(value: datetime | None) -> str:
    if value is None:
        return "an unknown date"
    return f"{value:%a}, {value.day} {value:%b %Y} at {value:%H:%M} UTC"


def _original_text(original: ReadMessage) -> str:
    return (original.text or (html_to_text(original.html) if original.html else "")).rstrip()


def _original_html(original: ReadMessage) -> str:
    """The original as HTML to quote: its own HTML sanitized (remote images blocked), or its text."""
    if original.html.strip():
        return sanitize_mail_html(original.html).html
    escaped = html.escape(_original_text(original))
    return f'<div style="white-space: pre-wrap">{escaped}</div>'


def _quote(original: ReadMessage) -> tuple[str, str]:
    said = f"On {_when(original.date)}, {original.from_ or 'someone'} wrote:"
    quoted = "\n".join(f"> {line}" if line else ">" for line in _original_text(original).splitlines())
    text = f"\n\n{said}\n{quoted}\n"
    rich = (f"<div><br></div><div><br></div><div>{html.escape(said)}</div>"
            f"<blockquote>{_original_html(original)}</blockquote>")
    return text, rich


def _forwarded(original: ReadMessage) -> tuple[str, str]:
    fields = [("From", original.from_), ("Date", _when(original.date)), ("Subject", original.subject),
              ("To", ", ".join(original.to))]
    if original.cc:
        fields.append(("Cc", ", ".join(original.cc)))
    lines = "\n".join(f"{name}: {value}" for name, value in fields)
    text = f"\n\n---------- Forwarded message ----------\n{lines}\n\n{_original_text(original)}\n"
    rows = "".join(f"<div>{name}: {html.escape(value)}</div>" for name, value in fields)
    rich = (f"<div><br></div><div><br></div><div>---------- Forwarded message ----------</div>{rows}<div><br></div>"
            f"{_original_html(original)}")
    return text, rich


def reply_start(*, mailbox: Mailbox, folder: str, uid: int, mode: str) -> Started:
    """The composition a reply, reply-all or forward of a stored message starts from (the store's
    MessageNotFound or FolderNotFound when there is no such message)."""
    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)}")
    raw = store_for(mailbox).fetch(folder, uid).raw
    original, parsed = read(raw), parse(raw)
    rich = bool(original.html.strip())
    if mode == FORWARD:
        text, rich_body = _forwarded(original)
        composition = Composition(subject=forward_subject(original.subject), references=_references(original),
                                  body_text=text, body_html=rich_body)
        return Started(composition, rich, (folder, uid), original.attachments)
    own = own_addresses(mailbox)
    authors = _pairs(parsed, "From")
    senders = _pairs(parsed, "Reply-To") or authors
    others, cc = _pairs(parsed, "To"), _pairs(parsed, "Cc")
    if authors and all(is_own_address(address, own) for _, address in authors):
        senders, others = others, []  # a reply to our own message (from Sent) goes to its recipients again
    seen: set[str] = set()
    to = _join(senders, own, seen)
    if mode == REPLY_ALL:
        to = ", ".join(value for value in (to, _join(others, own, seen)) if value)
        cc = _join(cc, own, seen)
    else:
        cc = ""
    text, rich_body = _quote(original)
    in_reply_to = next((value for value in message_ids(original.message_id) if MSG_ID.fullmatch(value)), "")
    composition = Composition(to=to, cc=cc, subject=reply_subject(original.subject), body_text=text,
                              body_html=rich_body, in_reply_to=in_reply_to, references=_references(original))
    return Started(composition, rich, (folder, uid))
