"""Turning due OutboundMessage rows into delivered mail: claim, build, sign, hand over, record.

A worker claims a row with one conditional UPDATE (two workers never both win) and counts the
attempt there, so even a message that kills its worker ends `failed` after MAX_ATTEMPTS. Every
end (sent, failed) is a final state with its event; nothing is dropped.
"""
import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from mailcore.domains.dkim import dkim_sign
from mailcore.events.services import emit
from mailcore.inbound.delivery import deliver_if_hosted
from mailcore.outbound.feedback import SendOutcome, outcome_report, return_path_for
from mailcore.outbound.models import OutboundMessage
from mailcore.outbound.relay import Outcome, relay
from mailcore.sending.compose import build_message
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1)]
CLAIM_TIMEOUT = timedelta(minutes=5)


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


def partner_mailbox_event_data(message: OutboundMessage) -> dict:
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
             data={**partner_mailbox_event_data(message), "sent_at": iso(now)}, sandbox=message.sandbox)
    if refused:
        emit(account=message.account, name="email.failed",
             data={**partner_mailbox_event_data(message), "failed_at": iso(now), "recipients": refused},
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


def _report_outcomes(message: OutboundMessage, outcomes: list[Outcome], gave_up: list[str]) -> None:
    """What this attempt did for each recipient of a bulk send: accepted (delivered), refused for good
    (a bounce from the relay's own answer), or given up after the last retry (a soft bounce)."""
    for outcome in outcomes:
        if outcome.accepted:
            outcome_report(SendOutcome(message, "delivered", recipient=outcome.recipient))
        elif outcome.status == "refused":
            outcome_report(SendOutcome(message, "bounced", recipient=outcome.recipient, verified=True,
                                       status=reply_status(outcome.reply), detail=outcome.reply))
    for recipient in gave_up:
        outcome_report(SendOutcome(message, "bounced", recipient=recipient, status="4.4.7", verified=True,
                                   detail=f"retries exhausted: {message.last_error}"))


def reply_status(reply: str) -> str:
    """The enhanced status code of an SMTP reply ("550 5.1.1 ..." -> "5.1.1"), else its class ("5.0.0")."""
    code, _, rest = reply.partition(" ")
    status = rest.split(" ", 1)[0]
    parts = status.split(".")
    if len(parts) == 3 and all(part.isdigit() for part in parts) and status[:1] == code[:1]:
        return status
    return f"{code[:1]}.0.0" if code[:1].isdigit() else "5.0.0"


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
    outcomes: list[Outcome] = []
    gave_up: list[str] = []
    if message.sandbox:
        accepted, pending = len(pending), []  # the whole pipeline ran; only the SMTP hand-over is skipped
    else:
        # Bulk mail goes out with its signed return path, so its bounces name exactly this message.
        envelope_from = return_path_for(message) if message.payload.get("verp") else mailbox.address
        outcomes = relay(envelope_from, pending, raw, local=deliver_if_hosted)
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
            gave_up = list(pending)
            if pending:
                message.last_error = "; ".join(deferred_replies)
            _finish(message, refused=refused, accepted=accepted, now=now)
        if message.payload.get("verp"):
            _report_outcomes(message, outcomes, gave_up)
    if message.status == OutboundMessage.Status.SENT and not message.sandbox:
        try:
            store_for(mailbox).append("Sent", raw, flags=("\\Seen",))
        except StoreError:
            log.warning("could not keep a copy of %s in Sent", message.message_id, exc_info=True)
