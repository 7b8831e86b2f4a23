"""POST /mail/send as a service: validate, reserve quota, store a durable row; and the dispatch
that turns due rows into delivered mail."""
import base64
import binascii
import logging
from datetime import datetime, timedelta

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode
from mailcore.accounts.models import Account, User
from mailcore.domains.dkim import dkim_sign
from mailcore.domains.names import InvalidHostname, address_to_ascii
from mailcore.events.services import emit
from mailcore.mailboxes.models import Mailbox
from mailcore.inbound.delivery import deliver_if_hosted
from mailcore.outbound.relay import relay
from mailcore.sending.compose import build_message, header_problem, mime_type_problem
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.quota import quota_release, quota_reserve
from mailcore.sending.rendering import render
from mailcore.sending.mail_templates import template_get
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for
from mailcore.jobs import DISPATCH_DUE_MAIL, enqueue
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

MAX_RECIPIENTS = 50
MAX_UNSEND_WINDOW = 30
MAX_ATTEMPTS = 5
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1)]
CLAIM_TIMEOUT = timedelta(minutes=5)
FAILED_LISTED_FOR = timedelta(days=7)


class MailboxLocked(DomainError):
    """The sending mailbox is suspended or disabled."""

    code = ErrorCode.FORBIDDEN



def _addresses(field: str, values: list[str], errors: dict) -> list[str]:
    """Valid addresses with their domains in ASCII (an IDN domain becomes its punycode form)."""
    cleaned = []
    for value in values:
        try:
            ascii_address = address_to_ascii(value)
            validate_email(ascii_address)
            cleaned.append(ascii_address)
        except ValidationError:
            errors.setdefault(field, []).append(f"{value!r} is not a valid email address")
        except InvalidHostname as error:
            errors.setdefault(field, []).append(str(error))
    return cleaned


def _attachments(attachments: list[dict], cap_mb: int, errors: dict) -> list[dict]:
    total, cleaned = 0, []
    for index, attachment in enumerate(attachments):
        problems = []
        try:
            payload = base64.b64decode(attachment["content_base64"], validate=True)
        except (binascii.Error, ValueError):
            problems.append(f"attachment {index} ({attachment['filename']!r}) is not valid base64")
            payload = b""
        content_type = attachment.get("content_type") or "application/octet-stream"
        if problem := mime_type_problem(content_type):
            problems.append(f"attachment {index}: content_type {problem}")
        if problem := header_problem(attachment["filename"]):
            problems.append(f"attachment {index}: filename {problem}")
        if problems:
            errors.setdefault("attachments", []).extend(problems)
            continue
        total += len(payload)
        cleaned.append({"filename": attachment["filename"], "content_type": content_type,
                        "content_base64": attachment["content_base64"]})
    if total > cap_mb * 1024 * 1024:
        errors.setdefault("attachments", []).append(
            f"attachments total {total / 1048576:.1f} MB; your plan allows {cap_mb} MB per message"
        )
    return cleaned


def mail_send(*, account: Account, user: User | None, data: dict) -> OutboundMessage:
    """Validate a send request and store it as a durable row; nothing is stored when it fails.

    Everything that will become a header is checked here, so an accepted message can always be
    built: the worker never meets a send it has to drop."""
    errors: dict[str, list[str]] = {}
    mailbox = Mailbox.objects.select_related("plan", "account__plan").filter(
        account=account, address=data["from_email"].strip().lower()
    ).first()
    if mailbox is None:
        raise ValidationError({"from_email": ["not a mailbox of this account"]})
    if not mailbox.is_active:
        raise MailboxLocked(f"{mailbox.address} is suspended and cannot send mail.")
    if problem := header_problem(mailbox.display_name):
        errors["from_email"] = [f"the display name of {mailbox.address} {problem}; change it first"]
    plan = mailbox.effective_plan
    sandbox = data.get("sandbox", False)

    to = _addresses("to", data.get("to", []), errors)
    cc = _addresses("cc", data.get("cc", []), errors)
    bcc = _addresses("bcc", data.get("bcc", []), errors)
    reply_to = _addresses("reply_to", [data["reply_to"]] if data.get("reply_to") else [], errors)
    if not data.get("to"):
        errors.setdefault("to", []).append("give at least one recipient")
    elif len(data["to"]) > MAX_RECIPIENTS:
        errors.setdefault("to", []).append(f"at most {MAX_RECIPIENTS} recipients")

    subject, body_html, body_text = data.get("subject"), data.get("body_html", ""), data.get("body_text", "")
    if data.get("template_id") is not None:
        try:
            template = template_get(account=account, user=user, template_id=data["template_id"])
        except ObjectDoesNotExist:
            errors.setdefault("template_id", []).append("no template with this id")
        else:
            variables = data.get("variables") or {}
            subject = render(subject if subject is not None else template.subject, variables, escape_html=False)
            body_html = render(template.body_html, variables, escape_html=True)
    if subject and (problem := header_problem(subject)):
        where = " (after the template's variables were filled in)" if data.get("template_id") is not None else ""
        errors.setdefault("subject", []).append(f"{problem}{where}")
    if not (body_html.strip() or body_text.strip()) and "template_id" not in errors:
        errors.setdefault("body_html", []).append("give body_html, body_text or template_id")

    attachments = _attachments(data.get("attachments", []), plan.attachment_max_mb, errors)

    now = timezone.now()
    scheduled_at, window = data.get("scheduled_at"), data.get("unsend_window")
    if scheduled_at is not None:
        if sandbox:
            errors.setdefault("scheduled_at", []).append("sandbox sends cannot be scheduled")
        elif scheduled_at <= now:
            errors.setdefault("scheduled_at", []).append("scheduled_at must be in the future")
    if window is not None and not 1 <= window <= MAX_UNSEND_WINDOW:
        errors.setdefault("unsend_window", []).append(f"unsend_window is 1 to {MAX_UNSEND_WINDOW} seconds")
    if errors:
        raise ValidationError(errors)

    due_at = scheduled_at or (now + timedelta(seconds=window) if window else now)
    held = scheduled_at is not None or bool(window)
    payload = {"to": to, "cc": cc, "bcc": bcc, "reply_to": reply_to[0] if reply_to else "",
               "subject": subject or "", "body_html": body_html, "body_text": body_text,
               "attachments": attachments, "pending": to + cc + bcc}
    with transaction.atomic():
        if not sandbox and mailbox.is_managed:
            quota_reserve(mailbox=mailbox, at=due_at)
        if not held:
            transaction.on_commit(lambda: enqueue(DISPATCH_DUE_MAIL))
        return OutboundMessage.objects.create(
            account=account,
            mailbox=mailbox,
            status=OutboundMessage.Status.SCHEDULED if held else OutboundMessage.Status.QUEUED,
            sandbox=sandbox,
            track_opens=bool(data.get("track_opens")) and plan.read_receipts,
            payload=payload,
            scheduled_at=scheduled_at,
            unsend_window=window or None,
            due_at=due_at,
        )


def scheduled_list(*, account: Account, status: str | None = None):
    """Mail that has not gone out yet (waiting, due, being sent or retried), and mail that failed for
    good in the last FAILED_LISTED_FOR: a send the worker could not deliver is never out of sight."""
    Status = OutboundMessage.Status
    rows = OutboundMessage.objects.filter(account=account).select_related("mailbox")
    waiting = Q(status__in=[Status.SCHEDULED, Status.QUEUED, Status.SENDING])
    failed = Q(status=Status.FAILED, finished_at__gte=timezone.now() - FAILED_LISTED_FOR)
    if status == Status.FAILED:
        return rows.filter(failed)
    if status:
        return rows.filter(status=status)
    return rows.filter(waiting | failed)


def scheduled_cancel(*, account: Account, scheduled_id: int) -> None:
    """Cancel before dispatch; a message already sent (or claimed) or not yours does not exist here."""
    message = OutboundMessage.objects.select_related("mailbox").get(account=account, pk=scheduled_id)
    cancelled = OutboundMessage.objects.filter(pk=message.pk, status=OutboundMessage.Status.SCHEDULED).update(
        status=OutboundMessage.Status.CANCELLED, finished_at=timezone.now()
    )
    if not cancelled:
        raise OutboundMessage.DoesNotExist("this message is no longer scheduled")
    if not message.sandbox and message.mailbox.is_managed:
        quota_release(mailbox=message.mailbox, at=message.due_at)  # a scheduled row's due_at never moved


# dispatch


def _due() -> Q:
    Status = OutboundMessage.Status
    now = timezone.now()
    return Q(status__in=[Status.QUEUED, Status.SCHEDULED], due_at__lte=now) | Q(status=Status.SENDING,
                                                                                 claimed_until__lt=now)


def _claim(message_id: int) -> bool:
    """Take a due row for this worker and count the attempt; a conditional UPDATE, so two workers
    never both win. Counting at the claim bounds a message that kills its worker every time."""
    return bool(OutboundMessage.objects.filter(_due(), pk=message_id).update(
        status=OutboundMessage.Status.SENDING, claimed_until=timezone.now() + CLAIM_TIMEOUT,
        attempts=F("attempts") + 1))


def outbound_dispatch_due(*, limit: int = 50) -> int:
    """Send every due message this worker can claim; returns how many it handled. One message's
    failure never stops the others: it is retried on the schedule, then failed for good."""
    due = OutboundMessage.objects.filter(_due()).order_by("due_at").values_list("pk", flat=True)[:limit]
    handled = 0
    for message_id in list(due):
        if _claim(message_id):
            try:
                outbound_dispatch(message_id=message_id)
            except Exception as error:  # noqa: BLE001 - recorded on the message and in the log
                log.exception("dispatch of outbound message %s failed", message_id)
                _retry_or_fail(message_id, f"451 4.3.0 Internal error while sending ({error.__class__.__name__})")
            handled += 1
    return handled


def _event_data(message: OutboundMessage) -> dict:
    payload = message.payload
    return {"message_id": str(message.message_id), "from": message.mailbox.address, "to": payload["to"],
            "cc": payload["cc"], "subject": payload["subject"],
            "scheduled_id": message.pk if message.is_held else None}


def _finish(message: OutboundMessage, *, refused: list[dict], accepted: int, now: datetime) -> None:
    """The final state (sent or failed) and its events, in the caller's transaction."""
    message.payload = {**message.payload, "pending": [], "refused": refused, "accepted": accepted}
    message.status = OutboundMessage.Status.SENT if accepted else OutboundMessage.Status.FAILED
    message.sent_at = now if message.status == OutboundMessage.Status.SENT else None
    message.finished_at = now
    message.claimed_until = None
    if message.status == OutboundMessage.Status.SENT:
        emit(account=message.account, name="email.sent",
             data={**_event_data(message), "sent_at": iso(now)}, sandbox=message.sandbox)
    if refused:
        emit(account=message.account, name="email.failed",
             data={**_event_data(message), "failed_at": iso(now), "recipients": refused},
             sandbox=message.sandbox)
    message.save()


def _fail(message: OutboundMessage, reply: str) -> None:
    """Give up on every recipient still pending, with one reply that says why."""
    with transaction.atomic():
        message.last_error = reply
        refused = list(message.payload.get("refused", []))
        refused += [{"recipient": r, "reply": reply} for r in message.payload["pending"]]
        _finish(message, refused=refused, accepted=message.payload.get("accepted", 0), now=timezone.now())


def _retry_or_fail(message_id: int, reply: str) -> None:
    """An error the worker did not expect: try again on the retry schedule, fail after the last attempt."""
    with transaction.atomic():
        message = OutboundMessage.objects.select_for_update().select_related("mailbox", "account").get(
            pk=message_id)
        if message.status != OutboundMessage.Status.SENDING:
            return
        if message.attempts < MAX_ATTEMPTS:
            message.status = OutboundMessage.Status.QUEUED
            message.due_at = timezone.now() + RETRY_DELAYS[min(message.attempts - 1, len(RETRY_DELAYS) - 1)]
            message.last_error, message.claimed_until = reply, None
            message.save(update_fields=["status", "due_at", "last_error", "claimed_until"])
        else:
            _fail(message, reply)


def outbound_dispatch(*, message_id: int) -> None:
    """Build, sign, hand over and record one claimed message. Safe to call again after a crash."""
    message = OutboundMessage.objects.select_related("mailbox", "account").get(pk=message_id)
    if message.status != OutboundMessage.Status.SENDING:
        return
    if message.attempts > MAX_ATTEMPTS:  # claimed again and again by workers that never finished
        _fail(message, f"554 5.3.0 Not sent: the worker stopped {MAX_ATTEMPTS} times while sending it")
        return
    mailbox = message.mailbox
    domain = mailbox.address.partition("@")[2]
    if not message.rfc_message_id:
        message.rfc_message_id = f"<{message.message_id}@{domain}>"
    try:
        raw = build_message(mailbox=mailbox, payload=message.payload, message_id=str(message.message_id),
                            rfc_message_id=message.rfc_message_id, track_opens=message.track_opens)
    except (ValueError, TypeError, LookupError) as error:  # cannot succeed on a later attempt
        log.warning("outbound message %s cannot be built: %s", message.message_id, error)
        _fail(message, f"554 5.6.0 Message could not be built: {error}")
        return
    if mailbox.is_managed:
        raw = dkim_sign(raw, domain_name=domain)
    pending = message.payload["pending"]
    refused: list[dict] = list(message.payload.get("refused", []))  # refusals of earlier attempts count too
    accepted = message.payload.get("accepted", 0)
    deferred_replies = []
    if message.sandbox:
        accepted, pending = len(pending), []  # the whole pipeline ran; only the SMTP hand-over is skipped
    else:
        outcomes = relay(mailbox.address, pending, raw, local=deliver_if_hosted)
        refused += [{"recipient": o.recipient, "reply": o.reply} for o in outcomes if o.status == "refused"]
        accepted += sum(1 for o in outcomes if o.accepted)
        pending = [o.recipient for o in outcomes if o.status == "deferred"]
        deferred_replies = [f"{o.recipient}: {o.reply}" for o in outcomes if o.status == "deferred"]
    now = timezone.now()
    with transaction.atomic():
        if pending and message.attempts < MAX_ATTEMPTS:
            message.payload = {**message.payload, "pending": pending, "refused": refused, "accepted": accepted}
            message.status = OutboundMessage.Status.QUEUED
            message.due_at = now + RETRY_DELAYS[min(message.attempts - 1, len(RETRY_DELAYS) - 1)]
            message.last_error = "; ".join(deferred_replies)
            message.claimed_until = None
            message.save()
        else:
            refused += [{"recipient": r, "reply": "retries exhausted"} for r in pending]
            if pending:
                message.last_error = "; ".join(deferred_replies)
            _finish(message, refused=refused, accepted=accepted, now=now)
    if message.status == OutboundMessage.Status.SENT and not message.sandbox:
        try:
            store_for(mailbox).append("Sent", raw, flags=("\\Seen",))
        except StoreError:
            log.warning("could not keep a copy of %s in Sent", message.message_id, exc_info=True)
