"""Mail a mailbox owner's own client submitted (Outlook, Thunderbird, a phone) on port 587.

Postfix authenticates the owner (SASL through Dovecot, the mailbox password) and refuses a MAIL
FROM that is not the login's own address or alias (reject_sender_login_mismatch); it then hands the
session to the submission intake (mailcore.sending.intake), which calls submission_accept. From
there the message is a send like any other: a durable row, the mailbox's quota reserved, DKIM-signed
by the dispatcher, a copy in Sent, and email.sent. Each refusal is an SMTP reply the client shows."""
import base64
import uuid
from dataclasses import dataclass
from email.utils import format_datetime

from django.db import transaction
from django.utils import timezone

from mailcore.jobs import DISPATCH_DUE_MAIL, enqueue
from mailcore.mailboxes.models import Alias, Mailbox
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.quota import SendQuotaExceeded, quota_reserve
from mailcore.sending.replies import own_addresses
from mailcore.sending.services import MAX_RECIPIENTS
from mailcore.store.reading import header, parse

# An attachment travels base64-encoded (4/3 of its size) inside a message that has a body and
# headers too: a plan's attachment cap, in the message size it allows.
BASE64_GROWTH = 4 / 3
ROOM_FOR_THE_REST = 1024 * 1024


class Refused(Exception):
    """The SMTP reply refusing a submission."""

    def __init__(self, reply: str):
        super().__init__(reply)
        self.reply = reply


@dataclass(frozen=True)
class Submitted:
    message: OutboundMessage
    reply: str


def submitting_mailbox(envelope_from: str) -> Mailbox:
    """The active hosted mailbox whose address (or alias) is the envelope sender."""
    address = envelope_from.strip().lower()
    mailbox = (Mailbox.objects.select_related("account", "plan", "account__plan").filter(address=address).first()
               or next((alias.mailbox for alias in Alias.objects.select_related(
                   "mailbox__account", "mailbox__plan", "mailbox__account__plan").filter(address=address)), None))
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


def _without_bcc(raw: bytes) -> bytes:
    """The message with its Bcc headers (and their folded lines) taken out: they never leave."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        head, separator, body = raw.partition(b"\n\n")
    kept, skipping = [], False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t"):
            if not skipping:
                kept.append(line)
            continue
        skipping = line.lower().startswith(b"bcc:")
        if not skipping:
            kept.append(line)
    return b"".join(kept) + separator + body


def submission_accept(envelope_from: str, recipients: list[str], raw: bytes) -> Submitted:
    """Check a submitted message and store it as a send; raises Refused with the reply to give."""
    mailbox = submitting_mailbox(envelope_from)
    if len(recipients) > MAX_RECIPIENTS:
        raise Refused(f"452 4.5.3 At most {MAX_RECIPIENTS} recipients per message")
    limit = max_message_bytes(mailbox)
    if len(raw) > limit:
        raise Refused(f"552 5.3.4 Message too big: the {mailbox.effective_plan.name} plan takes attachments up to "
                      f"{mailbox.effective_plan.attachment_max_mb} MB")
    message = parse(raw)
    senders = _addresses(message, "From")
    own = own_addresses(mailbox)
    if len(senders) != 1 or senders[0].lower() not in own:
        raise Refused(f"550 5.7.1 The From header must be your own address ({mailbox.address}) or one of its aliases")

    raw = _without_bcc(raw)
    added = b""
    if "Date" not in message:
        added += f"Date: {format_datetime(timezone.now().replace(microsecond=0))}\r\n".encode()
    rfc_message_id = header(message, "Message-ID")
    if not rfc_message_id:
        rfc_message_id = f"<{uuid.uuid4()}@{mailbox.address.partition('@')[2]}>"
        added += f"Message-ID: {rfc_message_id}\r\n".encode()
    now = timezone.now()
    payload = {"submitted": base64.b64encode(added + raw).decode("ascii"),
               "to": _addresses(message, "To"), "cc": _addresses(message, "Cc"), "subject": header(message, "Subject"),
               "pending": list(recipients)}
    try:
        with transaction.atomic():
            message = OutboundMessage.objects.create(account=mailbox.account, mailbox=mailbox,
                                                     status=OutboundMessage.Status.QUEUED, payload=payload,
                                                     rfc_message_id=rfc_message_id[:255], due_at=now)
            quota_reserve(mailbox=mailbox, at=now)
            transaction.on_commit(lambda: enqueue(DISPATCH_DUE_MAIL))
    except SendQuotaExceeded as exceeded:
        raise Refused(f"550 5.4.5 {exceeded}") from None
    return Submitted(message, f"250 2.0.0 Queued as {message.message_id}")
