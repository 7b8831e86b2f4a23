"""POST /mail/send as a service: validate, reserve quota, store a durable row; and the dispatch
that turns due rows into delivered mail."""
import base64
import binascii
import logging
from datetime import datetime, timedelta

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from mailcore.accounts.models import Account, User
from mailcore.domains.dkim import dkim_sign
from mailcore.events.services import emit
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.relay import relay
from mailcore.sending.compose import build_message
from mailcore.sending.models import OutboundMessage
from mailcore.sending.quota import quota_release, quota_reserve
from mailcore.sending.rendering import render
from mailcore.sending.templates import template_get
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for

log = logging.getLogger(__name__)

MAX_RECIPIENTS = 50
MAX_UNSEND_WINDOW = 30
MAX_ATTEMPTS = 5
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1)]
CLAIM_TIMEOUT = timedelta(minutes=5)


class MailboxLocked(Exception):
    """The sending mailbox is suspended or disabled."""


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def _addresses(field: str, values: list[str], errors: dict) -> list[str]:
    cleaned = []
    for value in values:
        try:
            validate_email(value)
            cleaned.append(value.strip())
        except ValidationError:
            errors.setdefault(field, []).append(f"{value!r} is not a valid email address")
    return cleaned


def _attachments(attachments: list[dict], cap_mb: int, errors: dict) -> list[dict]:
    total, cleaned = 0, []
    for index, attachment in enumerate(attachments):
        try:
            payload = base64.b64decode(attachment["content_base64"], validate=True)
        except (binascii.Error, ValueError):
            errors.setdefault("attachments", []).append(f"attachment {index} ({attachment['filename']!r}) is not valid base64")
            continue
        content_type = attachment.get("content_type") or "application/octet-stream"
        if content_type.count("/") != 1:
            errors.setdefault("attachments", []).append(f"attachment {index} has an invalid content_type")
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
    """Validate a send request and store it as a durable row; nothing is stored when it fails."""
    errors: dict[str, list[str]] = {}
    mailbox = Mailbox.objects.select_related("plan", "account__plan").filter(
        account=account, address=data["from_email"].strip().lower()
    ).first()
    if mailbox is None:
        raise ValidationError({"from_email": ["not a mailbox of this account"]})
    if not mailbox.is_active:
        raise MailboxLocked(f"{mailbox.address} is suspended and cannot send mail.")
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
            quota_reserve(mailbox=mailbox)
        if not held:
            transaction.on_commit(_dispatch_soon)
        return OutboundMessage.objects.create(
            account=account,
            mailbox=mailbox,
            status=OutboundMessage.Status.SCHEDULED if held else OutboundMessage.Status.QUEUED,
            sandbox=sandbox,
            track_opens=bool(data.get("track_opens")) and plan.read_receipts,
            payload=payload,
            scheduled_at=scheduled_at,
            due_at=due_at,
        )


def _dispatch_soon() -> None:
    """With Celery, a worker picks the message up at once; otherwise the next sweep does (seconds)."""
    from django.conf import settings

    if settings.REDIS_URL:
        from mailcore.tasks import dispatch_due_mail

        dispatch_due_mail.delay()


def scheduled_list(*, account: Account):
    return OutboundMessage.objects.filter(account=account, status=OutboundMessage.Status.SCHEDULED).select_related("mailbox")


def scheduled_cancel(*, account: Account, scheduled_id: int) -> None:
    """Cancel before dispatch; a message already sent (or claimed) or not yours does not exist here."""
    message = OutboundMessage.objects.select_related("mailbox").get(account=account, pk=scheduled_id)
    cancelled = OutboundMessage.objects.filter(pk=message.pk, status=OutboundMessage.Status.SCHEDULED).update(
        status=OutboundMessage.Status.CANCELLED
    )
    if not cancelled:
        raise OutboundMessage.DoesNotExist("this message is no longer scheduled")
    if not message.sandbox and message.mailbox.is_managed:
        quota_release(mailbox=message.mailbox, created_at=message.created_at)


# dispatch


def _claim(message_id: int, now: datetime) -> bool:
    """Take a due row for this worker; a conditional UPDATE, so two workers never both win."""
    Status = OutboundMessage.Status
    due = Q(status__in=[Status.QUEUED, Status.SCHEDULED], due_at__lte=now) | Q(status=Status.SENDING, claimed_until__lt=now)
    return bool(
        OutboundMessage.objects.filter(due, pk=message_id).update(status=Status.SENDING, claimed_until=now + CLAIM_TIMEOUT)
    )


def outbound_dispatch_due(*, limit: int = 50) -> int:
    """Send every due message this worker can claim; returns how many it handled."""
    now = timezone.now()
    Status = OutboundMessage.Status
    due = OutboundMessage.objects.filter(
        Q(status__in=[Status.QUEUED, Status.SCHEDULED], due_at__lte=now) | Q(status=Status.SENDING, claimed_until__lt=now)
    ).order_by("due_at").values_list("pk", flat=True)[:limit]
    handled = 0
    for message_id in list(due):
        if _claim(message_id, now):
            outbound_dispatch(message_id=message_id)
            handled += 1
    return handled


def _event_data(message: OutboundMessage) -> dict:
    payload = message.payload
    return {"message_id": str(message.message_id), "from": message.mailbox.address, "to": payload["to"],
            "cc": payload["cc"], "subject": payload["subject"], "scheduled_id": message.pk if message.scheduled_at else None}


def outbound_dispatch(*, message_id: int) -> None:
    """Build, sign, hand over and record one claimed message. Safe to call again after a crash."""
    message = OutboundMessage.objects.select_related("mailbox", "account").get(pk=message_id)
    if message.status != OutboundMessage.Status.SENDING:
        return
    mailbox = message.mailbox
    domain = mailbox.address.partition("@")[2]
    if not message.rfc_message_id:
        message.rfc_message_id = f"<{message.message_id}@{domain}>"
    raw = build_message(mailbox=mailbox, payload=message.payload, message_id=str(message.message_id),
                        rfc_message_id=message.rfc_message_id, track_opens=message.track_opens)
    if mailbox.is_managed:
        raw = dkim_sign(raw, domain_name=domain)
    message.attempts += 1
    pending = message.payload["pending"]
    refused: list[dict] = list(message.payload.get("refused", []))  # refusals of earlier attempts count too
    accepted = message.payload.get("accepted", 0)
    deferred_replies = []
    if message.sandbox:
        accepted, pending = len(pending), []  # the whole pipeline ran; only the SMTP hand-over is skipped
    else:
        outcomes = relay(mailbox.address, pending, raw)
        refused += [{"recipient": o.recipient, "reply": o.reply} for o in outcomes if o.status == "refused"]
        accepted += sum(1 for o in outcomes if o.accepted)
        pending = [o.recipient for o in outcomes if o.status == "deferred"]
        deferred_replies = [f"{o.recipient}: {o.reply}" for o in outcomes if o.status == "deferred"]
    message.payload = {**message.payload, "pending": pending, "refused": refused, "accepted": accepted}
    now = timezone.now()
    with transaction.atomic():
        if pending and message.attempts < MAX_ATTEMPTS:
            message.status = OutboundMessage.Status.QUEUED
            message.due_at = now + RETRY_DELAYS[min(message.attempts - 1, len(RETRY_DELAYS) - 1)]
            message.last_error = "; ".join(deferred_replies)
        else:
            refused += [{"recipient": r, "reply": "retries exhausted"} for r in pending]
            message.payload = {**message.payload, "pending": [], "refused": refused}
            message.status = OutboundMessage.Status.SENT if accepted else OutboundMessage.Status.FAILED
            message.sent_at = now if message.status == OutboundMessage.Status.SENT else None
            if message.status == OutboundMessage.Status.SENT:
                emit(account=message.account, name="email.sent",
                     data={**_event_data(message), "sent_at": _iso(now)}, sandbox=message.sandbox)
            if refused:
                emit(account=message.account, name="email.failed",
                     data={**_event_data(message), "failed_at": _iso(now), "recipients": refused},
                     sandbox=message.sandbox)
        message.claimed_until = None
        message.save()
    if message.status == OutboundMessage.Status.SENT:
        try:
            store_for(mailbox).append("Sent", raw, flags=("\\Seen",))
        except StoreError:
            log.warning("could not keep a copy of %s in Sent", message.message_id, exc_info=True)
