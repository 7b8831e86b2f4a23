"""Build the MIME message for a send: identity, signature, alternatives, attachments, tracking."""
import base64
import html
import re
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses

import nh3
from django.utils import timezone

from mailcore.mailboxes.models import Mailbox
from mailcore.sending import tracking
from mailcore.store.reading import Attachment, ReadMessage

# RFC 2045: type "/" subtype, each a token (no spaces, controls or tspecials).
_MIME_TYPE = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+/[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# RFC 5322 msg-id as mail clients write it: "<" id-left "@" id-right ">", printable, no spaces.
MSG_ID = re.compile(r"<[!-;=?-~]+@[!-;=?-~]+>")
MAX_REFERENCES_LENGTH = 4000
# A link marked with this attribute (written before its href) is left as it is: the unsubscribe link of
# bulk mail must never count as a click nor depend on the tracking redirect.
NO_TRACK = "data-no-track"
_HREF = re.compile(r"""(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?://[^"']+)\2""", re.IGNORECASE)


def header_problem(value: str) -> str | None:
    """Why a value cannot be a header (or part of one), or None: no line breaks, no control characters.

    Checked when a send is accepted, so the worker never meets a message it cannot build."""
    if any(char in value for char in "\r\n"):
        return "must not contain line breaks (CR or LF)"
    if any((ord(char) < 32 and char != "\t") or ord(char) == 127 for char in value):
        return "must not contain control characters"
    return None


def mime_type_problem(value: str) -> str | None:
    """Why a value is not a MIME type such as application/pdf, or None."""
    return None if _MIME_TYPE.fullmatch(value) else f"{value!r} is not a MIME type such as application/pdf"


def message_ids_problem(value: str, *, single: bool) -> str | None:
    """Why a value is not one msg-id such as <a1@example.com> (single) or a space-separated chain of
    them (References), or None."""
    if problem := header_problem(value):
        return problem
    ids = value.split()
    if single and len(ids) != 1:
        return "must be one message id such as <a1b2@example.com>"
    if len(value) > MAX_REFERENCES_LENGTH:
        return f"must be at most {MAX_REFERENCES_LENGTH} characters"
    if bad := next((found for found in ids if not MSG_ID.fullmatch(found)), None):
        return f"{bad!r} is not a message id such as <a1b2@example.com>"
    return None


def html_to_text(body_html: str) -> str:
    """A plain-text alternative for HTML-only mail: tags dropped, block ends become line breaks."""
    text = re.sub(r"(?i)<br\s*/?>|</(p|div|h[1-6]|li|tr)>", "\n", body_html)
    text = html.unescape(nh3.clean(text, tags=set()))
    return "\n".join(line.strip() for line in text.splitlines()).strip() + "\n"


def _with_signature(mailbox: Mailbox, body_html: str, body_text: str) -> tuple[str, str]:
    if not mailbox.signature_html:
        return body_html, body_text
    if body_html:
        body_html = f'{body_html}\n<div class="signature">-- <br>{mailbox.signature_html}</div>'
    return body_html, f"{body_text.rstrip()}\n\n-- \n{html_to_text(mailbox.signature_html)}"


def _tracked(body_html: str, message_id: str, track_opens: bool) -> str:
    """Links become signed redirects (a click event each); an opened pixel when asked for."""
    if not track_opens:
        return body_html

    def redirect(m: re.Match) -> str:
        if NO_TRACK in m.group(1):
            return m.group(0)
        url = html.escape(tracking.click_url(message_id, html.unescape(m.group(3))))
        return f"{m.group(1)}{m.group(2)}{url}{m.group(2)}"

    body_html = _HREF.sub(redirect, body_html)
    pixel = f'<img src="{tracking.open_url(message_id)}" width="1" height="1" alt="" style="display:none">'
    return f"{body_html}\n{pixel}"


@dataclass(frozen=True)
class Composed:
    """A built message and what reading.read(raw) would say of it, known without parsing raw
    again (dispatch keeps the Sent copy from it: parsing was a third of a send's cost)."""
    raw: bytes
    summary: ReadMessage


def build_message(*, mailbox: Mailbox, payload: dict, message_id: str, rfc_message_id: str,
                  track_opens: bool) -> bytes:
    """RFC 5322 bytes with CRLF line ends, ready for DKIM and SMTP. Bcc stays off the headers."""
    return compose(mailbox=mailbox, payload=payload, message_id=message_id, rfc_message_id=rfc_message_id,
                   track_opens=track_opens).raw


def _listed(values: list[str]) -> list[str]:
    """Addresses as reading.addresses lists them: "Name <a@b>" or "a@b"."""
    return [f"{name} <{address}>" if name else address for name, address in getaddresses(values) if address]


def compose(*, mailbox: Mailbox, payload: dict, message_id: str, rfc_message_id: str, track_opens: bool,
            date: datetime | None = None) -> Composed:
    """build_message, with the summary of what was built."""
    date = (date or timezone.now()).replace(microsecond=0)
    message = EmailMessage()
    local, _, domain = mailbox.address.partition("@")
    message["From"] = Address(display_name=mailbox.display_name, username=local, domain=domain)
    message["To"] = ", ".join(payload["to"])
    if payload.get("cc"):
        message["Cc"] = ", ".join(payload["cc"])
    if payload.get("reply_to"):
        message["Reply-To"] = payload["reply_to"]
    message["Subject"] = payload.get("subject", "")
    message["Date"] = format_datetime(date)
    message["Message-ID"] = rfc_message_id
    if payload.get("in_reply_to"):
        message["In-Reply-To"] = payload["in_reply_to"]
    if payload.get("references"):
        message["References"] = payload["references"]
    message["MIME-Version"] = "1.0"
    body_html, body_text = payload.get("body_html", ""), payload.get("body_text", "")
    if body_html and not body_text:
        body_text = html_to_text(body_html)
    body_html, body_text = _with_signature(mailbox, body_html, body_text)
    message.set_content(body_text or "\n")
    if body_html:
        body_html = _tracked(body_html, message_id, track_opens)
        message.add_alternative(body_html, subtype="html")
    calendar = payload.get("calendar")
    if calendar:  # iMIP (RFC 6047): the alternative clients act on, and a copy as Outlook and Gmail add
        message.add_alternative(calendar["ical"], subtype="calendar", charset="utf-8",
                                params={"method": calendar["method"]})
    attached = [(attachment["filename"], attachment["content_type"], base64.b64decode(attachment["content_base64"]))
                for attachment in payload.get("attachments", [])]
    if calendar:
        attached.append(("invite.ics", "application/ics", calendar["ical"].encode()))
    for filename, content_type, content in attached:
        maintype, _, subtype = content_type.partition("/")
        message.add_attachment(content, maintype=maintype, subtype=subtype, filename=filename)
    raw = message.as_bytes(policy=message.policy.clone(linesep="\r\n"))
    # Bulk-mail headers (checked printable ASCII, one line) go first, as they are: the email package
    # would encode a long URL as RFC 2047 words, which List-Unsubscribe readers do not decode.
    extra = "".join(f"{name}: {value}\r\n" for name, value in payload.get("headers", []))
    display = " ".join(mailbox.display_name.split())
    first_leaf = 1 + bool(body_html) + bool(calendar)  # the leaves before the attachments: text, html, calendar
    summary = ReadMessage(
        message_id=rfc_message_id, subject=" ".join(payload.get("subject", "").split()),
        from_=f"{display} <{mailbox.address}>" if display else mailbox.address,
        to=_listed(payload["to"]), cc=_listed(payload.get("cc") or []),
        reply_to=_listed([payload["reply_to"]] if payload.get("reply_to") else []), date=date,
        in_reply_to=payload.get("in_reply_to") or None, references=payload.get("references", ""), headers=[],
        text=body_text or "\n", html=body_html,
        attachments=[Attachment(first_leaf + position, filename, content_type, len(content), False)
                     for position, (filename, content_type, content) in enumerate(attached)],
        content_type=message.get_content_type())
    return Composed(extra.encode("ascii") + raw, summary)
