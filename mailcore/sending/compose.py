"""Build the MIME message for a send: identity, signature, alternatives, attachments, tracking."""
import base64
import html
import re
from dataclasses import dataclass
from datetime import datetime
from email import encoders, policy
from email.charset import QP, Charset
from email.message import Message
from email.mime.base import MIMEBase
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import format_datetime, formataddr, getaddresses

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


_LINK = re.compile(r"""<a\b[^>]*?\bhref\s*=\s*(["'])(.*?)\1[^>]*>(.*?)</a\s*>""", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def _link_as_text(m: re.Match) -> str:
    """`label (URL)`, or the URL alone when it is its own label: a text reader keeps every link
    (SpamAssassin scores tracked mail whose text part lacks the HTML's URLs)."""
    url, label = m.group(2).strip(), m.group(3)
    if not url or url.startswith("#") or url.lower().startswith("javascript:"):
        return label
    shown = html.unescape(_TAG.sub("", label)).strip()
    return url if not shown or shown == html.unescape(url) else f"{label} ({url})"


def html_to_text(body_html: str) -> str:
    """A plain-text alternative for HTML-only mail: tags dropped, block ends become line breaks,
    links written `label (URL)` with the URL as the HTML names it (never the click-tracking one)."""
    text = _LINK.sub(_link_as_text, body_html)
    text = re.sub(r"(?i)<br\s*/?>|</(p|div|h[1-6]|li|tr)>", "\n", text)
    text = html.unescape(nh3.clean(text, tags=set()))
    return "\n".join(line.strip() for line in text.splitlines()).strip() + "\n"


def _with_signature(mailbox: Mailbox, body_html: str, body_text: str) -> tuple[str, str]:
    if not mailbox.signature_html:
        return body_html, body_text
    if body_html:
        body_html = f'{body_html}\n<div class="signature">-- <br>{mailbox.signature_html}</div>'
    return body_html, f"{body_text.rstrip()}\n\n-- \n{html_to_text(mailbox.signature_html)}"


_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)
_HTML_END = re.compile(r"</html\s*>", re.IGNORECASE)


def _inside_body(body_html: str, addition: str) -> str:
    """`addition` just before the last </body>; before </html> when there is no body element; else
    at the end. Content after </html> is outside the document, which filters score."""
    for end in (_BODY_END, _HTML_END):
        found = list(end.finditer(body_html))
        if found:
            at = found[-1].start()
            return f"{body_html[:at]}{addition}\n{body_html[at:]}"
    return f"{body_html}\n{addition}"


def _tracked(body_html: str, message_id: str, track_opens: bool, host: str | None = None) -> str:
    """Links become signed redirects (a click event each); an opened pixel when asked for. `host` is
    the sending domain's own tracking host when it has one in use (Domain.tracking_host)."""
    if not track_opens:
        return body_html

    def redirect(m: re.Match) -> str:
        if NO_TRACK in m.group(1):
            return m.group(0)
        url = html.escape(tracking.click_url(message_id, html.unescape(m.group(3)), host=host))
        return f"{m.group(1)}{m.group(2)}{url}{m.group(2)}"

    body_html = _HREF.sub(redirect, body_html)
    pixel = f'<img src="{tracking.open_url(message_id, host=host)}" width="1" height="1" alt="" style="display:none">'
    return _inside_body(body_html, pixel)


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
    """build_message, with the summary of what was built.

    The tree is built with the email package's compat32 classes, three times cheaper than
    EmailMessage's header registry (a third of dispatch's cost): bodies quoted-printable UTF-8 (7-bit
    on the wire), non-ASCII header text as RFC 2047 words, non-ASCII filenames as RFC 2231."""
    date = (date or timezone.now()).replace(microsecond=0)
    for name, value in [("From", mailbox.display_name), ("Subject", payload.get("subject", "")),
                        ("Reply-To", payload.get("reply_to", "")), ("In-Reply-To", payload.get("in_reply_to", "")),
                        ("References", payload.get("references", "")), *[("To", v) for v in payload["to"]],
                        *[("Cc", v) for v in payload.get("cc") or []]]:
        if value and (problem := header_problem(value)):  # refused when the send was accepted; older rows
            raise ValueError(f"{name} {problem}")
    body_html, body_text = payload.get("body_html", ""), payload.get("body_text", "")
    if body_html and not body_text:
        body_text = html_to_text(body_html)
    body_html, body_text = _with_signature(mailbox, body_html, body_text)
    body_text = body_text or "\n"
    alternatives = [_text_part(body_text, "plain")]
    if body_html:
        host = mailbox.domain.tracking_host if track_opens and mailbox.domain_id else None
        body_html = _tracked(body_html, message_id, track_opens, host)
        alternatives.append(_text_part(body_html, "html"))
    calendar = payload.get("calendar")
    if calendar:  # iMIP (RFC 6047): the alternative clients act on, and a copy as Outlook and Gmail add
        invitation = _text_part(calendar["ical"], "calendar")
        invitation.set_param("method", calendar["method"])
        alternatives.append(invitation)
    attached = [(attachment["filename"], attachment["content_type"], base64.b64decode(attachment["content_base64"]))
                for attachment in payload.get("attachments", [])]
    if calendar:
        attached.append(("invite.ics", "application/ics", calendar["ical"].encode()))
    body = alternatives[0] if len(alternatives) == 1 else _multipart("alternative", alternatives)
    message = _multipart("mixed", [body, *map(_attachment_part, attached)]) if attached else body
    message["From"] = formataddr((mailbox.display_name, mailbox.address), charset="utf-8")
    message["To"] = _address_header(payload["to"])
    if payload.get("cc"):
        message["Cc"] = _address_header(payload["cc"])
    if payload.get("reply_to"):
        message["Reply-To"] = _address_header([payload["reply_to"]])
    message["Subject"] = payload.get("subject", "")
    message["Date"] = format_datetime(date)
    message["Message-ID"] = rfc_message_id
    if payload.get("in_reply_to"):
        message["In-Reply-To"] = payload["in_reply_to"]
    if payload.get("references"):
        message["References"] = payload["references"]
    message["MIME-Version"] = "1.0"
    raw = message.as_bytes(policy=_WIRE)
    # Bulk-mail headers (checked printable ASCII, one line) go first, as they are: the email package
    # would encode a long URL as RFC 2047 words, which List-Unsubscribe readers do not decode.
    extra = "".join(f"{name}: {value}\r\n" for name, value in payload.get("headers", []))
    display = " ".join(mailbox.display_name.split())
    first_leaf = len(alternatives)  # the leaves before the attachments: text, html, calendar
    summary = ReadMessage(
        message_id=rfc_message_id, subject=" ".join(payload.get("subject", "").split()),
        from_=f"{display} <{mailbox.address}>" if display else mailbox.address,
        to=_listed(payload["to"]), cc=_listed(payload.get("cc") or []),
        reply_to=_listed([payload["reply_to"]] if payload.get("reply_to") else []), date=date,
        in_reply_to=payload.get("in_reply_to") or None, references=payload.get("references", ""), headers=[],
        text=body_text, html=body_html,
        attachments=[Attachment(first_leaf + position, filename, content_type, len(content), False)
                     for position, (filename, content_type, content) in enumerate(attached)],
        content_type=message.get_content_type())
    return Composed(extra.encode("ascii") + raw, summary)


_WIRE = policy.compat32.clone(linesep="\r\n")
_UTF8_QP = Charset("utf-8")
_UTF8_QP.body_encoding = QP


def _text_part(text: str, subtype: str) -> MIMEText:
    part = MIMEText(text, subtype, _UTF8_QP)
    del part["MIME-Version"]  # only the message itself says it
    return part


def _multipart(subtype: str, parts: list[Message]) -> MIMEMultipart:
    container = MIMEMultipart(subtype, _subparts=parts)
    del container["MIME-Version"]
    return container


def _attachment_part(attached: tuple[str, str, bytes]) -> MIMEBase:
    filename, content_type, content = attached
    part = MIMEBase(*content_type.split("/", 1))
    del part["MIME-Version"]
    part.set_payload(content)
    encoders.encode_base64(part)
    part.add_header("Content-Disposition", "attachment",
                    filename=filename if filename.isascii() else ("utf-8", "", filename))
    return part


def _address_header(values: list[str]) -> str:
    """An address list header; display names outside ASCII as RFC 2047 words."""
    return ", ".join(formataddr((name, address), charset="utf-8") for name, address in getaddresses(values) if address)
