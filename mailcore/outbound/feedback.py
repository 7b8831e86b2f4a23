"""Bounces and complaints about our sends: delivery status notifications (RFC 3464) and ARF
feedback reports (RFC 5965) that come back to a mailbox raise email.bounced and email.spam_reported.

A report is matched to the OutboundMessage whose rfc_message_id is the Message-ID of the returned
message (its message/rfc822 or text/rfc822-headers part), else of an Original-Message-ID or
X-Original-Message-ID field. Only the receiving account's sends are looked up, so a report can
never raise an event on another account. Both events carry `sandbox: true` after a sandbox send.

email.bounced, one per recipient that hard-failed (Action: failed with a 5.x.x status; `delayed`,
and a 4.x.x failure after the sender's queue gave up, are not bounces):
    message_id (our UUID, as in the send result), mailbox (the sending address), recipient (the
    address as the send named it when the Original- or Final-Recipient matches one, else the
    Original-Recipient, else the Final-Recipient), status ("5.1.1"), diagnostic (the
    Diagnostic-Code text without its type, "" when there is none), bounced_at (ISO 8601, arrival
    of the report).

email.spam_reported, one per report (Feedback-Type other than auth-failure and not-spam):
    message_id, mailbox, recipient (Original-Rcpt-To, else the send's only recipient, else null),
    feedback_type ("abuse", "fraud", ...), user_agent (the reporter's, "" when absent),
    reported_at (ISO 8601, arrival of the report).

Signed return paths (VERP): a bulk send (payload "verp") goes out with the envelope sender
bounces+<id>-<signature>@<sending domain>, so its bounces come back to an address that names
exactly that message; the signature (an HMAC of the id with SECRET_KEY) makes a forged one fail.
Reports arriving there are matched by the address alone (return_path_record), soft failures
included, and are never stored in a mailbox.

Outcomes: whatever keeps its own state about sends (campaign deliveries, above this layer)
subscribes once with outcome_listen; dispatch, the report handling here and the tracking
endpoints call outcome_report inside their own transaction. A listener's failure is logged and
never costs the send, the delivery of the report or the event.
"""
import base64
import logging
import quopri
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from email import policy
from email.message import Message
from email.parser import BytesHeaderParser, BytesParser, HeaderParser
from typing import Literal

from django.db import transaction
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac

from mailcore.accounts.models import Account
from mailcore.events.services import emit
from mailcore.hooks import Hook
from mailcore.store.reading import message_ids
from mailcore.outbound.models import OutboundMessage
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

# Feedback types that are not complaints: DKIM/SPF/DMARC failure reports (RFC 6591) and
# "this was not spam" (RFC 6430).
NOT_COMPLAINTS = {"auth-failure", "not-spam"}
_STATUS_PARTS = {"message/delivery-status", "message/global-delivery-status"}
_RETURNED_PARTS = {"message/rfc822", "message/global", "text/rfc822-headers", "message/global-headers"}
_ORIGINAL_ID_FIELDS = ("original-message-id", "x-original-message-id")
_STATUS = re.compile(r"[245]\.\d{1,3}\.\d{1,3}")
_REPLY_CODE = re.compile(r"\b([245])\d\d\b")

Fields = dict[str, list[str]]  # lower-case field name -> its values, in order


@dataclass(frozen=True)
class FailedRecipient:
    recipient: str  # Final-Recipient, without its address type
    original_recipient: str | None
    status: str  # "5.1.1"
    diagnostic: str


@dataclass(frozen=True)
class Feedback:
    kind: Literal["bounce", "complaint"]
    original_message_id: str  # "<id@host>" of the message the report is about
    failed: tuple[FailedRecipient, ...] = ()  # bounce
    soft: tuple[FailedRecipient, ...] = ()  # bounce, read with soft=True: failed with a 4.x.x status
    feedback_type: str = ""  # complaint
    user_agent: str = ""
    recipients: tuple[str, ...] = ()  # complaint: Original-Rcpt-To


def feedback_from(raw: bytes, *, content_type: str | None = None, soft: bool = False) -> Feedback | None:
    """The hard bounce or complaint this message reports; None for anything else, bad mail included.
    `content_type` is the message's, when the caller has parsed it already; with `soft`, a report of
    failures after temporary errors only (the sender's queue gave up) is a bounce too."""
    try:
        if content_type is None:
            content_type = BytesHeaderParser(policy=policy.compat32).parsebytes(raw).get_content_type()
        if content_type != "multipart/report":
            return None  # the common case, decided from the headers alone
        report = BytesParser(policy=policy.compat32).parsebytes(raw)
        parts = [part for part in report.get_payload() if isinstance(part, Message)]
        return _bounce(report, parts, soft=soft) or _complaint(report, parts)
    except Exception:  # bad mail is still mail: it is delivered, it just reports nothing
        log.info("unreadable multipart/report", exc_info=True)
        return None


def feedback_record(*, feedback: Feedback, account: Account) -> bool:
    """Raise the events for the account's send the report is about; False when it is not one of them."""
    original = (
        OutboundMessage.objects.select_related("mailbox")
        .filter(account=account, rfc_message_id=feedback.original_message_id)
        .order_by("-id")
        .first()
    )
    if original is None:
        return False
    now = iso(timezone.now(), timespec="seconds")
    about = {"message_id": str(original.message_id), "mailbox": original.mailbox.address}
    with transaction.atomic():
        if feedback.kind == "bounce":
            seen = set()
            for failed in feedback.failed:
                recipient = _as_sent(original, failed.original_recipient, failed.recipient)
                if recipient.casefold() in seen:
                    continue
                seen.add(recipient.casefold())
                emit(account=original.account, name="email.bounced", sandbox=original.sandbox, data={
                    **about, "recipient": recipient, "status": failed.status, "diagnostic": failed.diagnostic,
                    "bounced_at": now,
                })
                outcome_report(SendOutcome(original, "bounced", recipient=recipient, status=failed.status,
                                           detail=failed.diagnostic))
        else:
            sent_to = _sent_to(original)
            recipient = _as_sent(original, *feedback.recipients) or (sent_to[0] if len(sent_to) == 1 else None)
            emit(account=original.account, name="email.spam_reported", sandbox=original.sandbox, data={
                **about, "recipient": recipient, "feedback_type": feedback.feedback_type,
                "user_agent": feedback.user_agent, "reported_at": now,
            })
            outcome_report(SendOutcome(original, "complained", recipient=recipient or "",
                                       detail=feedback.feedback_type))
    return True


def return_path_record(*, feedback: Feedback, message: OutboundMessage) -> None:
    """A report that arrived at the message's signed return path: about that message whatever it
    names. Hard failures raise email.bounced as any bounce does; every failure, soft ones included,
    and complaints are reported as outcomes with `verified` set."""
    now = iso(timezone.now(), timespec="seconds")
    about = {"message_id": str(message.message_id), "mailbox": message.mailbox.address}
    sent_to = _sent_to(message)
    with transaction.atomic():
        if feedback.kind == "complaint":
            recipient = _as_sent(message, *feedback.recipients) or (sent_to[0] if len(sent_to) == 1 else "")
            emit(account=message.account, name="email.spam_reported", sandbox=message.sandbox, data={
                **about, "recipient": recipient or None, "feedback_type": feedback.feedback_type,
                "user_agent": feedback.user_agent, "reported_at": now,
            })
            outcome_report(SendOutcome(message, "complained", recipient=recipient, detail=feedback.feedback_type,
                                       verified=True))
            return
        seen = set()
        for failed in (*feedback.failed, *feedback.soft):
            recipient = _as_sent(message, failed.original_recipient, failed.recipient)
            if len(sent_to) == 1:  # a bulk send has one recipient: the report cannot name another
                recipient = sent_to[0]
            if recipient.casefold() in seen:
                continue
            seen.add(recipient.casefold())
            if failed.status.startswith("5."):
                emit(account=message.account, name="email.bounced", sandbox=message.sandbox, data={
                    **about, "recipient": recipient, "status": failed.status, "diagnostic": failed.diagnostic,
                    "bounced_at": now,
                })
            outcome_report(SendOutcome(message, "bounced", recipient=recipient, status=failed.status,
                                       detail=failed.diagnostic, verified=True))


# Signed return paths (VERP)

RETURN_PATH_LOCAL_PART = "bounces"
_RETURN_PATH_SALT = "mailwell.outbound.return-path"


def _return_path_signature(message_pk: int) -> str:
    """120 bits of HMAC in lower-case base32: local parts are matched case-insensitively."""
    digest = salted_hmac(_RETURN_PATH_SALT, str(message_pk), algorithm="sha256").digest()
    return base64.b32encode(digest[:15]).decode().lower()


def return_path_for(message: OutboundMessage) -> str:
    """The envelope sender of a bulk send: bounces+<id>-<signature>@<the sending domain>."""
    domain = message.mailbox.address.rpartition("@")[2]
    return f"{RETURN_PATH_LOCAL_PART}+{message.pk}-{_return_path_signature(message.pk)}@{domain}"


def return_path_message(address: str) -> OutboundMessage | None:
    """The message whose signed return path this address is; None for any other address, a forged or
    altered one included (no database read before the signature checks out)."""
    local, _, domain = address.strip().strip("<>").lower().rpartition("@")
    prefix, plus, tag = local.partition("+")
    number, dash, signature = tag.partition("-")
    if prefix != RETURN_PATH_LOCAL_PART or not plus or not dash or not number.isdigit() or len(number) > 18:
        return None
    if not constant_time_compare(signature, _return_path_signature(int(number))):
        return None
    message = OutboundMessage.objects.select_related("mailbox", "account").filter(pk=int(number)).first()
    if message is None or message.mailbox.address.rpartition("@")[2].lower() != domain:
        return None
    return message


# Outcomes of sends, for the layers above

@dataclass(frozen=True)
class SendOutcome:
    message: OutboundMessage
    kind: Literal["delivered", "bounced", "complained", "opened", "clicked"]
    recipient: str = ""
    status: str = ""  # bounced: the enhanced status code, "5.1.1" or "4.4.7"
    detail: str = ""  # bounced: the diagnostic or reply; complained: the feedback type
    # bounced/complained: it came from our own relay's answer or to the message's signed return path,
    # so it is about this message and recipient for sure (a report at a mailbox may be made up)
    verified: bool = False
    at: datetime | None = None


OutcomeListener = Callable[[SendOutcome], None]
# Features that hear what became of a send (campaigns), registered in their AppConfig.ready(); each is
# called with the outcome, in a savepoint of its own.
send_outcome_known = Hook("send_outcome_known")


def outcome_listen(listener: OutcomeListener) -> None:
    """Subscribe once, at start-up (a feature's AppConfig.ready(): campaigns)."""
    send_outcome_known.register(listener)


def outcome_report(outcome: SendOutcome) -> None:
    """Tell every listener, each in a savepoint of the caller's transaction."""
    if outcome.at is None:
        outcome = replace(outcome, at=timezone.now())
    for listener in send_outcome_known.functions:
        try:
            with transaction.atomic():
                listener(outcome)
        except Exception:
            log.exception("outcome %s of message %s not recorded by %s", outcome.kind, outcome.message.pk,
                          getattr(listener, "__qualname__", listener))


def _bounce(report: Message, parts: list[Message], *, soft: bool = False) -> Feedback | None:
    status_part = next((part for part in parts if part.get_content_type() in _STATUS_PARTS), None)
    if status_part is None:
        return None
    blocks = _field_blocks(status_part)
    failed, temporary = [], []
    for block in blocks:
        if "final-recipient" not in block or _first_word(_field(block, "action")) != "failed":
            continue
        diagnostic = _without_type(_field(block, "diagnostic-code"))
        status = _status(_field(block, "status"), diagnostic)
        recipient = _address(_field(block, "final-recipient"))
        found = FailedRecipient(recipient, _address(_field(block, "original-recipient")) or None, status, diagnostic)
        if status.startswith("5.") and recipient:
            failed.append(found)
        elif soft and status.startswith("4.") and recipient:
            temporary.append(found)
    original_id = _original_message_id(report, parts, blocks)
    if not (failed or temporary) or not (original_id or soft):
        return None
    return Feedback("bounce", original_id, failed=tuple(failed), soft=tuple(temporary))


def _complaint(report: Message, parts: list[Message]) -> Feedback | None:
    report_part = next((part for part in parts if part.get_content_type() == "message/feedback-report"), None)
    if report_part is None:
        return None
    blocks = _field_blocks(report_part)
    fields: Fields = {}
    for block in blocks:  # one block by the RFC; a stray blank line must not hide the rest
        for name, values in block.items():
            fields.setdefault(name, []).extend(values)
    feedback_type = _first_word(_field(fields, "feedback-type"))
    original_id = _original_message_id(report, parts, blocks)
    if not feedback_type or feedback_type in NOT_COMPLAINTS or not original_id:
        return None
    recipients = tuple(filter(None, (_address(value) for value in fields.get("original-rcpt-to", []))))
    return Feedback("complaint", original_id, feedback_type=feedback_type,
                    user_agent=_field(fields, "user-agent"), recipients=recipients)


def _field_blocks(part: Message) -> list[Fields]:
    """The blocks of fields of a machine-readable part."""
    blocks, block, name = [], {}, None
    for line in _part_text(part).replace("\r\n", "\n").split("\n"):
        if not line.strip():
            if block:
                blocks.append(block)
            block, name = {}, None
        elif line[0] in " \t" and name:
            block[name][-1] += " " + line.strip()
        elif ":" in line:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            block.setdefault(name, []).append(value.strip())
    if block:
        blocks.append(block)
    return [{name: [" ".join(value.split()) for value in values] for name, values in found.items()} for found in blocks]


def _original_message_id(report: Message, parts: list[Message], blocks: list[Fields]) -> str:
    for part in parts:
        if part.get_content_type() not in _RETURNED_PARTS:
            continue
        headers = HeaderParser(policy=policy.compat32).parsestr(_part_text(part))
        if found := _message_id(str(headers.get("Message-ID", ""))):
            return found
    for name in _ORIGINAL_ID_FIELDS:
        for block in blocks:
            if found := _message_id(_field(block, name)):
                return found
        if found := _message_id(str(report.get(name, ""))):
            return found
    return ""


def _message_id(value: str) -> str:
    value = " ".join(value.split())
    ids = message_ids(value)
    if ids:
        return ids[0]
    return f"<{value}>" if "@" in value and " " not in value and "<" not in value else ""


def _status(status: str, diagnostic: str) -> str:
    """The Status code; when it is missing, the enhanced code or the reply code of the diagnostic."""
    if found := _STATUS.match(status):
        return found.group()
    if found := _STATUS.search(diagnostic):
        return found.group()
    if found := _REPLY_CODE.search(diagnostic):
        return f"{found.group(1)}.0.0"
    return ""


def _sent_to(original: OutboundMessage) -> list[str]:
    payload = original.payload if isinstance(original.payload, dict) else {}
    return [address for key in ("to", "cc", "bcc") for address in payload.get(key) or [] if isinstance(address, str)]


def _as_sent(original: OutboundMessage, *candidates: str | None) -> str:
    """The candidate as the send spelled it, when it is one of its recipients; else the first candidate."""
    sent = {address.casefold(): address for address in _sent_to(original)}
    for candidate in candidates:
        if candidate and candidate.casefold() in sent:
            return sent[candidate.casefold()]
    return next((candidate for candidate in candidates if candidate), "")


def _field(fields: Fields, name: str) -> str:
    values = fields.get(name)
    return values[0] if values else ""


def _first_word(value: str) -> str:
    return value.split()[0].lower() if value.split() else ""


def _without_type(value: str) -> str:
    """'rfc822; bob@x' -> 'bob@x', 'smtp; 550 ...' -> '550 ...'."""
    kind, semicolon, rest = value.partition(";")
    return rest.strip() if semicolon and " " not in kind.strip() else value.strip()


def _address(value: str) -> str:
    address = _without_type(value).strip("<> ")
    return address if "@" in address and " " not in address else ""


def _part_text(part: Message) -> str:
    """A part's content as text, however the parser left it."""
    payload = part.get_payload()
    if not isinstance(payload, list):  # text/rfc822-headers, or a part the parser kept as text
        return _decoded(part)
    # message/delivery-status was read as one message per block, any other message/* as one message;
    # back to bytes (8-bit header bytes are kept as surrogates) so UTF-8 survives
    data = b"\n\n".join(
        "".join(f"{name}: {value}\n" for name, value in message.raw_items()).encode("utf-8", "surrogateescape")
        + b"\n" + (body if isinstance(body := message.get_payload(decode=True), bytes) else b"")
        for message in payload
    )
    encoding = str(part.get("Content-Transfer-Encoding", "")).strip().lower()
    # RFC 6532/6533 let message/global* parts be encoded; the parser took the encoded text for a message
    if encoding == "base64":
        data = base64.b64decode(data)
    elif encoding == "quoted-printable":
        data = quopri.decodestring(data)
    return _utf8(data)


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _decoded(part: Message) -> str:
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    try:
        return data.decode(part.get_content_charset() or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", errors="replace")


