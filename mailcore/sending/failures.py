"""Sends that failed after the owner left the page come back to the owner, as mail clients and MTAs
do: the message is kept in Drafts with the reason (when nothing was delivered and it was written
here, not in the owner's own mail app), a bounce (a DSN, RFC 3464, from the platform's mailer
daemon, with the reason and the original attached) lands in the Inbox, and the webmail shows a
notice until the owner resends or dismisses it.

Temporary refusals (4xx) are retried by dispatch with backoff; the owner hears only when it gives
up. A SendFailure row is written with the message's final state (same transaction); the store
writes happen here, each marked done as soon as it is done, so a worker killed between them
repeats at most the one write it was making."""
import base64
import email
import logging
from datetime import timedelta
from email.message import Message
from email.mime.message import MIMEMessage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import format_datetime, formataddr

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from mailcore.hooks import Hook
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.models import OutboundMessage
from mailcore.outbound.relay import reply_status
from mailcore.sending.compose import compose
from mailcore.sending.models import SendFailure
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for

log = logging.getLogger(__name__)

CLAIM_TIMEOUT = timedelta(minutes=5)
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2)]
MAX_ATTEMPTS = 8  # then the notice alone tells the owner (a full mailbox refuses both writes)
ORIGINAL_ATTACHED_MAX = 256 * 1024  # above it the bounce carries the original's headers only
GAVE_UP = "retries exhausted"


def send_failure_note(message: OutboundMessage) -> SendFailure | None:
    """Called with a message's final state, in its transaction: a row when someone was not reached
    by mail the owner wrote themselves, in the webmail or in their own mail app (submission).
    Integrators' sends (REST, MCP) are reported by `email.failed` and their status; bulk mail by
    the campaign's outcome reports; connected mailboxes are bounced by their own provider."""
    refused = message.payload.get("refused") or []
    own = message.payload.get("webmail") or "submitted" in message.payload
    if not refused or not own or message.sandbox or message.payload.get("verp") or not message.mailbox.is_managed:
        return None
    failure, _ = SendFailure.objects.get_or_create(message=message, defaults={
        "mailbox": message.mailbox, "recipients": refused,
        "delivered_to_none": message.status == OutboundMessage.Status.FAILED})
    return failure


# what the owner reads


def is_permanent(reply: str) -> bool:
    return reply.strip()[:1] == "5"


def failure_reason(failure: SendFailure, recipient: dict) -> str:
    """Why one recipient was not reached, in words: the server's own answer, or that it kept
    deferring the message until dispatch gave up."""
    reply = recipient.get("reply", "")
    if reply == GAVE_UP:
        last = next((part.partition(": ")[2] for part in failure.message.last_error.split("; ")
                     if part.startswith(f"{recipient['recipient']}: ")), "") or failure.message.last_error
        return f"the receiving server kept deferring it, so we gave up after {failure.message.attempts} tries" + (
            f" (its last answer: {last})" if last else "")
    if is_permanent(reply):
        return f"the receiving server refused it: {reply}"
    return f"it could not be handed over: {reply}"


def failure_summary(failure: SendFailure) -> str:
    """One line for the notice: "Your message to amy@x.test was not sent: ..."."""
    first = failure.recipients[0]
    others = len(failure.recipients) - 1
    who = first["recipient"] + (f" and {others} other{'s' if others != 1 else ''}" if others else "")
    verb = "was not sent" if failure.delivered_to_none else "did not reach everyone"
    return f"Your message to {who} {verb}: {failure_reason(failure, first)}"


def send_failures_open(*, mailbox: Mailbox, limit: int = 5) -> list[SendFailure]:
    """The notices the owner has not dismissed yet, newest first."""
    return list(SendFailure.objects.filter(mailbox=mailbox, dismissed_at__isnull=True)
                .select_related("message")[:limit])


def send_failure_for_draft(*, mailbox: Mailbox, draft_uid: int) -> SendFailure | None:
    return SendFailure.objects.filter(mailbox=mailbox, draft_uid=draft_uid).select_related("message").first()


def send_failure_dismiss(*, mailbox: Mailbox, failure_id: int | None = None, draft_uid: int | None = None) -> int:
    """Close a notice (the owner's Dismiss, or a resend of its draft); another mailbox's is untouched."""
    found = SendFailure.objects.filter(mailbox=mailbox, dismissed_at__isnull=True)
    if failure_id is not None:
        found = found.filter(pk=failure_id)
    if draft_uid is not None:
        found = found.filter(draft_uid=draft_uid)
    return found.update(dismissed_at=timezone.now())


# the bounce


def _original(message: OutboundMessage) -> bytes | None:
    if "submitted" in message.payload:
        return base64.b64decode(message.payload["submitted"])
    try:
        return compose(mailbox=message.mailbox, payload=message.payload, message_id=str(message.message_id),
                       rfc_message_id=message.rfc_message_id or f"<{message.message_id}@x>", track_opens=False).raw
    except (ValueError, TypeError, LookupError):
        return None


def bounce_bytes(failure: SendFailure) -> bytes:
    """A delivery status notification (multipart/report, RFC 3464) from the platform's mailer daemon."""
    message, mailbox = failure.message, failure.mailbox
    subject = message.payload.get("subject") or "(no subject)"
    lines = [f"This is the mail system at {settings.MAIL_HOST}.", "",
             f"Your message \"{subject}\" could not be delivered to:" if failure.delivered_to_none
             else f"Your message \"{subject}\" could not be delivered to some of its recipients:", ""]
    for recipient in failure.recipients:
        lines += [f"  {recipient['recipient']}", f"    {failure_reason(failure, recipient)}", ""]
    if failure.delivered_to_none and "submitted" not in message.payload:
        lines.append("A copy is in your Drafts folder: open it there to correct it and send it again.")
    elif not failure.delivered_to_none:
        lines.append("The others received it; a copy is in your Sent folder.")
    lines.append("")
    report = MIMEMultipart("report", **{"report-type": "delivery-status"})
    report["From"] = formataddr(("Mail Delivery System", f"MAILER-DAEMON@{settings.MAIL_HOST}"))
    report["To"] = mailbox.address
    report["Subject"] = f"Undelivered Mail Returned to Sender: {subject}"
    report["Date"] = format_datetime(timezone.now())
    report["Message-ID"] = f"<bounce-{message.message_id}@{settings.MAIL_HOST}>"
    report["Auto-Submitted"] = "auto-replied"
    if message.rfc_message_id:
        report["In-Reply-To"] = message.rfc_message_id
        report["References"] = message.rfc_message_id
    report.attach(MIMEText("\n".join(lines), "plain", "utf-8"))
    status = Message()
    status.set_type("message/delivery-status")
    per_message = Message()
    per_message["Reporting-MTA"] = f"dns; {settings.MAIL_HOST}"
    per_message["Arrival-Date"] = format_datetime(message.created_at)
    blocks = [per_message]
    for recipient in failure.recipients:
        reply = recipient.get("reply", "")
        block = Message()
        block["Final-Recipient"] = f"rfc822; {recipient['recipient']}"
        block["Action"] = "failed"
        block["Status"] = _status_code(reply)
        block["Diagnostic-Code"] = f"smtp; {one_line(reply if reply != GAVE_UP else message.last_error or GAVE_UP)}"
        blocks.append(block)
    status.set_payload(blocks)
    report.attach(status)
    original = _original(message)
    if original is not None:
        if len(original) <= ORIGINAL_ATTACHED_MAX:
            report.attach(MIMEMessage(email.message_from_bytes(original)))
        else:
            head = original.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
            report.attach(MIMEText(head + "\r\n", "rfc822-headers", "utf-8"))
    return report.as_bytes(policy=email.policy.SMTP)


def one_line(reply: str) -> str:
    """A multi-line SMTP reply as the one line a DSN field holds (RFC 3464 `smtp; 550 5.1.1 ...`):
    its lines joined by spaces, no CR/LF left to start bogus header lines."""
    return " ".join(reply.split())


def _status_code(reply: str) -> str:
    if reply == GAVE_UP:
        return "4.4.7"
    return reply_status(reply)


# the job

# The web client keeps a failed send it wrote in Drafts (webmail registers it): called with failure=,
# returns the draft's UID, 0 for a send the draft form cannot hold. Without the web client, 0.
failed_send_drafted = Hook("failed_send_drafted")


def _claim(limit: int) -> list[int]:
    now = timezone.now()
    due = list(SendFailure.objects.filter(returned_at__isnull=True).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)).order_by("created_at", "id")
        .values_list("pk", flat=True)[:limit])
    claimed = []
    for pk in due:  # one conditional UPDATE each: two workers never both win a row
        won = SendFailure.objects.filter(pk=pk, returned_at__isnull=True).filter(
            Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)).update(claimed_until=now + CLAIM_TIMEOUT)
        if won:
            claimed.append(pk)
    return claimed


def failed_sends_return(*, limit: int = 20) -> int:
    """Keep the draft and deliver the bounce of each failure not yet returned; returns how many
    were handled. A store that refuses (a full mailbox, a server away) is tried again later."""
    claimed = _claim(limit)
    for failure in SendFailure.objects.filter(pk__in=claimed).select_related("message", "mailbox", "message__mailbox"):
        try:
            _return(failure)
        except Exception as error:  # noqa: BLE001 - StoreError mostly (a full mailbox, a server away): retried
            if not isinstance(error, StoreError):
                log.exception("returning failed send %s failed", failure.message.message_id)
            failure.attempts += 1
            if failure.attempts >= MAX_ATTEMPTS:
                log.warning("gave up returning failed send %s to %s: %s", failure.message.message_id,
                            failure.mailbox.address, error)
                SendFailure.objects.filter(pk=failure.pk).update(returned_at=timezone.now(), claimed_until=None,
                                                                 attempts=failure.attempts)
            else:
                delay = RETRY_DELAYS[min(failure.attempts - 1, len(RETRY_DELAYS) - 1)]
                SendFailure.objects.filter(pk=failure.pk).update(claimed_until=timezone.now() + delay,
                                                                 attempts=failure.attempts)
    return len(claimed)


def returned_draft_id(message: OutboundMessage) -> str:
    return f"<returned-{message.message_id}@{settings.MAIL_HOST}>"


def _return(failure: SendFailure) -> None:
    message, mailbox = failure.message, failure.mailbox
    store = store_for(mailbox)
    if failure.delivered_to_none and "submitted" not in message.payload and failure.draft_uid is None:
        uid = failed_send_drafted.answer(0, failure=failure)
        with transaction.atomic():
            SendFailure.objects.filter(pk=failure.pk).update(draft_uid=uid)
        failure.draft_uid = uid
    if failure.bounced_at is None:
        store.deliver(bounce_bytes(failure), recipient=mailbox.address, envelope_from="")
        SendFailure.objects.filter(pk=failure.pk).update(bounced_at=timezone.now())
    SendFailure.objects.filter(pk=failure.pk).update(returned_at=timezone.now(), claimed_until=None)
