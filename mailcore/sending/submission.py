"""Mail a mailbox owner's own client submitted (Outlook, Thunderbird, a phone) on port 587.

Postfix authenticates the owner (SASL through Dovecot, the mailbox password) and refuses a MAIL
FROM that is not the login's own address or alias (reject_sender_login_mismatch); it then hands the
session to the submission intake (mailcore.sending.intake), which calls submission_accept. From
there the message is a send like any other: a durable row, the mailbox's quota reserved, DKIM-signed
by the dispatcher (with the key of the From address's domain), a copy in Sent, and email.sent. Each
refusal is an SMTP reply the client shows."""
import base64
import re
import uuid
from email.utils import format_datetime

from django.db import transaction
from django.utils import timezone

from mailcore.domains.dkim import DkimFormatError, dkim_signable
from mailcore.jobs import DISPATCH_DUE_MAIL, enqueue
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import is_own_address, mailbox_reached_by, own_addresses
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.compose import message_ids_problem
from mailcore.sending.quota import HourlySendLimitReached, SendQuotaExceeded, quota_reserve
from mailcore.sending.services import MAX_RECIPIENTS
from mailcore.store.reading import header, parse_headers

# An attachment travels base64-encoded (4/3 of its size) inside a message that has a body and
# headers too: a plan's attachment cap, in the message size it allows.
BASE64_GROWTH = 4 / 3
ROOM_FOR_THE_REST = 1024 * 1024
TOO_MANY_RECIPIENTS = f"452 4.5.3 At most {MAX_RECIPIENTS} recipients per message"
# Header fields that name hidden recipients: they never leave (RFC 5322 3.6.3, 3.6.6).
_HIDDEN = re.compile(rb"(?:resent-)?bcc[ \t]*:", re.IGNORECASE)
_MESSAGE_ID = re.compile(rb"message-id[ \t]*:", re.IGNORECASE)
# The trace fields Postfix prepends; the message's own fields begin below them.
_TRACE = re.compile(rb"(?:received|return-path)[ \t]*:", re.IGNORECASE)


class Refused(Exception):
    """The SMTP reply refusing a submission."""

    def __init__(self, reply: str):
        super().__init__(reply)
        self.reply = reply


def submitting_mailbox(envelope_from: str) -> Mailbox:
    """The active hosted mailbox the envelope sender reaches (its address, an alias, or a
    subaddress of either: what Postfix let the login use)."""
    mailbox = mailbox_reached_by(envelope_from.strip().lower())
    if mailbox is None or not mailbox.is_managed:
        raise Refused(f"553 5.7.1 <{envelope_from}> is not a mailbox hosted here")
    if not mailbox.is_active:
        raise Refused(f"550 5.7.1 {mailbox.address} is suspended and cannot send mail")
    return mailbox


def max_message_bytes(mailbox: Mailbox) -> int:
    return int(mailbox.effective_plan.attachment_max_mb * 1024 * 1024 * BASE64_GROWTH) + ROOM_FOR_THE_REST


def _addresses(message, name: str) -> list[str]:
    """The addresses of a header, as the parser understood them ("Doe, John" <a@b> is one); none
    when the header cannot be read."""
    try:
        return [address.addr_spec for value in message.get_all(name, []) for address in value.addresses]
    except Exception:  # noqa: BLE001 - a defective header names nobody
        return []


def _without(raw: bytes, dropped) -> bytes:
    """The message without the header fields (and their folded lines) whose first line `dropped`
    matches."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        head, separator, body = raw.partition(b"\n\n")
    kept, skipping = [], False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = bool(dropped(line))
        if not skipping:
            kept.append(line)
    return b"".join(kept) + separator + body


def _with_fields(raw: bytes, fields: bytes) -> bytes:
    """The message with `fields` added below its leading trace fields (the Received Postfix
    prepends), where a message's own fields begin."""
    position = 0
    while _TRACE.match(raw, position) or (position and raw[position:position + 1] in (b" ", b"\t")):
        end = raw.find(b"\n", position)
        if end < 0:
            break
        position = end + 1
    return raw[:position] + fields + raw[position:]


def submission_accept(envelope_from: str, recipients: list[str], raw: bytes) -> OutboundMessage:
    """Check a submitted message and store it as a send; raises Refused with the reply to give."""
    mailbox = submitting_mailbox(envelope_from)
    plan = mailbox.effective_plan
    if len(recipients) > MAX_RECIPIENTS:
        raise Refused(TOO_MANY_RECIPIENTS)
    if len(raw) > max_message_bytes(mailbox):
        raise Refused(f"552 5.3.4 Message too big: the {plan.name} plan takes attachments up to "
                      f"{plan.attachment_max_mb} MB")
    message = parse_headers(raw)
    senders = _addresses(message, "From")
    if len(senders) != 1 or not is_own_address(senders[0], own_addresses(mailbox)):
        raise Refused(f"550 5.7.1 The From header must be your own address ({mailbox.address}) or one of its aliases")
    try:
        dkim_signable(raw)
    except DkimFormatError as error:
        raise Refused(f"554 5.6.0 The message cannot be signed: {error}") from None

    raw = _without(raw, _HIDDEN.match)
    added = b""
    if "Date" not in message:
        added += f"Date: {format_datetime(timezone.now().replace(microsecond=0))}\r\n".encode()
    rfc_message_id = header(message, "Message-ID")
    if message_ids_problem(rfc_message_id, single=True) or len(rfc_message_id) > 255:
        # none, blank or malformed: ours, so bounces and replies can be matched to this send
        raw = _without(raw, _MESSAGE_ID.match)
        rfc_message_id = f"<{uuid.uuid4()}@{mailbox.address.partition('@')[2]}>"
        added += f"Message-ID: {rfc_message_id}\r\n".encode()
    to, cc = _addresses(message, "To"), _addresses(message, "Cc")
    shown = {address.lower() for address in to + cc}
    now = timezone.now()
    payload = {"submitted": base64.b64encode(_with_fields(raw, added)).decode("ascii"),
               "signing_domain": senders[0].rpartition("@")[2].lower(),
               "to": to, "cc": cc, "bcc": [r for r in recipients if r.lower() not in shown],
               "subject": header(message, "Subject"), "pending": list(recipients)}
    try:
        with transaction.atomic():
            sent = OutboundMessage.objects.create(account=mailbox.account, mailbox=mailbox,
                                                  status=OutboundMessage.Status.QUEUED, payload=payload,
                                                  rfc_message_id=rfc_message_id, due_at=now)
            quota_reserve(mailbox=mailbox, at=now)
            transaction.on_commit(lambda: enqueue(DISPATCH_DUE_MAIL))
    except SendQuotaExceeded as exceeded:
        # The day's quota is a refusal the owner must see; the hour's passes, so the client may retry.
        hourly = isinstance(exceeded, HourlySendLimitReached)
        raise Refused(f"451 4.7.1 {exceeded}" if hourly else f"550 5.4.5 {exceeded}") from None
    return sent
