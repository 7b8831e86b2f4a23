"""Sends held for review: the outbound screener (mailcore.sending.screening) judged a send likely
spam before it left through our relay. Held, nothing is handed over; its account (the hosting
partner, for its clients' mailboxes) hears at once (`email.held`, and a notice by mail to its
people) and releases it (it leaves as it is, never scored again) or rejects it (it fails as any
refused send does: `email.failed`, and the owner gets it back with the reason). A compromised
mailbox's flood stops here instead of burning the platform's IP reputation."""
import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from mailcore.accounts.models import Account
from mailcore.events.services import emit
from mailcore.jobs import DISPATCH_DUE_MAIL, enqueue
from mailcore.outbound.models import OutboundMessage
from mailcore.sending.screening import Hold, send_origin
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

REJECTED_REPLY = "554 5.7.1 Not sent: it looked like spam and was held, and its sending was refused on review"


def held_event_data(message: OutboundMessage) -> dict:
    payload, held = message.payload, message.payload.get("held", {})
    return {"message_id": str(message.message_id), "held_id": message.pk, "from": message.mailbox.address,
            "to": payload["to"], "cc": payload["cc"], "subject": payload["subject"],
            "origin": held.get("origin", ""), "score": held.get("score"), "threshold": held.get("threshold"),
            "reasons": held.get("reasons", []), "held_at": held.get("held_at")}


def send_hold(message: OutboundMessage, hold: Hold) -> None:
    """Keep a claimed send back (the dispatcher's claim ends here), tell its account."""
    now = timezone.now()
    with transaction.atomic():
        message.status = OutboundMessage.Status.HELD
        message.claimed_until = None
        message.last_error = f"Held for review: scored {hold.score:.1f} (the limit is {hold.threshold:.1f})"
        message.payload = {**message.payload, "held": {
            "score": round(hold.score, 2), "threshold": hold.threshold, "reasons": list(hold.reasons),
            "origin": send_origin(message), "held_at": iso(now)}}
        message.save(update_fields=["status", "claimed_until", "last_error", "payload"])
        emit(account=message.account, name="email.held", data=held_event_data(message))
        transaction.on_commit(lambda: _held_notice(message))
    log.warning("outbound message %s from %s held: score %.1f", message.message_id, message.mailbox.address,
                hold.score)


def _held_notice(message: OutboundMessage) -> None:
    """The account's people hear of it by mail as well as by webhook (most partners read their mail)."""
    recipients = list(message.account.users.values_list("email", flat=True))
    if not recipients:
        return
    body = render_to_string("emails/send_held.txt", {"message": message, "held": held_event_data(message),
                                                     "base_url": settings.PUBLIC_BASE_URL})
    try:
        send_mail(f"A message from {message.mailbox.address} was held: it looks like spam", body, None, recipients)
    except Exception:  # noqa: BLE001 - the event is the record; the notice is a courtesy
        log.exception("the notice of held message %s could not be sent", message.message_id)


def held_list(*, account: Account):
    return (OutboundMessage.objects.filter(account=account, status=OutboundMessage.Status.HELD)
            .select_related("mailbox").order_by("-id"))


def held_release(*, account: Account, held_id: int) -> OutboundMessage:
    """Send it after all (as it is: it is not scored again). Raises DoesNotExist when it is not
    held (released or rejected already, or not this account's)."""
    return _decide(account=account, held_id=held_id, reject=False)


def held_reject(*, account: Account, held_id: int) -> OutboundMessage:
    """Do not send it: the dispatcher fails it at once as a refused send (email.failed, and the owner
    gets it back with REJECTED_REPLY)."""
    return _decide(account=account, held_id=held_id, reject=True)


def _decide(*, account: Account, held_id: int, reject: bool) -> OutboundMessage:
    with transaction.atomic():
        message = OutboundMessage.objects.select_for_update().select_related("mailbox").get(
            account=account, pk=held_id, status=OutboundMessage.Status.HELD)
        decided = {"decision": "rejected" if reject else "released", "decided_at": iso(timezone.now())}
        message.payload = {**message.payload, "held": {**message.payload["held"], **decided}}
        if reject:
            message.payload["rejected"] = REJECTED_REPLY
        message.status, message.due_at, message.last_error = OutboundMessage.Status.QUEUED, timezone.now(), ""
        message.save(update_fields=["payload", "status", "due_at", "last_error"])
        transaction.on_commit(lambda: enqueue(DISPATCH_DUE_MAIL))
    return message
