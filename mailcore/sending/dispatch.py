"""Turning due OutboundMessage rows into delivered mail: claim, build, sign, hand over, record.

A worker claims a batch of due rows with one conditional UPDATE (two workers never both win a row)
and counts the attempt there, so even a message that kills its worker ends `failed` after
MAX_ATTEMPTS. The batch goes to the relay over one connection; then its states and events are
written in one transaction and its copies kept in Sent, one write per mailbox. Every end (sent,
failed) is a final state with its event; nothing is dropped.

Each hand-over is written down on its row at once (payload "handed_over": the relay's answers), so
a worker killed before its batch is recorded costs no second copy: the next claim of the row
records those answers instead of sending again. Only a kill between the relay's answer and that
one UPDATE can send a message twice, the same window as when each message was recorded alone.
Before each hand-over the worker confirms it still holds the row's claim (_claim_held), so a
claim that lapsed while the worker was stuck, and that another worker took, is not sent again.
A connected mailbox's message is claimed and sent alone, within CONNECTED_MAILBOX_SEND_SECONDS.
"""
import base64
import json
import logging
from collections import defaultdict
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from mailcore.domains.dkim import dkim_sign, dkim_signing_keys_for
from mailcore.events.services import Raised, emit_many
from mailcore.inbound.delivery import deliver_if_hosted
from mailcore.inbox.connected import connected_smtp_server
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.selectors import send_route
from mailcore.outbound.feedback import SendOutcome, outcome_report, return_path_for
from mailcore.outbound.models import OutboundMessage
from mailcore.netsafety import Deadline
from mailcore.outbound.relay import Outcome, Relay, SubmissionServer, reply_status
from mailcore.sending.compose import Composed, compose
from mailcore.sending.failures import failed_sends_return, send_failure_note
from mailcore.sending.held import send_hold
from mailcore.sending.screening import outbound_screening, send_origin
from mailcore.store.base import StoreError
from mailcore.store.embedded import EmbeddedStore
from mailcore.store.factory import store_for
from mailcore.store.reading import read
from mailcore.timefmt import iso

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
RETRY_DELAYS = [timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=15), timedelta(hours=1)]
CLAIM_TIMEOUT = timedelta(minutes=5)
# A claim this close to its end is confirmed in the database before a hand-over (clocks of workers differ a little).
CLAIM_MARGIN = timedelta(seconds=30)
# What one attempt changes on a row (written for the whole batch at once, see _save_states).
ATTEMPT_FIELDS = ["payload", "status", "due_at", "last_error", "claimed_until", "sent_at", "finished_at",
                  "rfc_message_id"]


@dataclass
class Attempt:
    """One claimed message after its hand-over: its new state is set on `message`, not yet saved."""
    message: OutboundMessage
    built: Composed
    outcomes: list[Outcome] = field(default_factory=list)
    gave_up: list[str] = field(default_factory=list)  # recipients still deferred after the last attempt


def _due(now: datetime) -> Q:
    Status = OutboundMessage.Status
    return Q(status__in=[Status.QUEUED, Status.SCHEDULED], due_at__lte=now) | Q(status=Status.SENDING,
                                                                                 claimed_until__lt=now)


def _claim(limit: int, kind: str) -> list[int]:
    """Take up to `limit` due rows of mailboxes of this kind, oldest first, and count their attempt:
    one UPDATE ... RETURNING whose condition holds row by row, so two workers never both win a row.
    On PostgreSQL the rows another worker is claiming are skipped (SKIP LOCKED) rather than waited for."""
    now = timezone.now()
    due = OutboundMessage.objects.filter(_due(now), mailbox__kind=kind).order_by("due_at", "id").values("pk")[:limit]
    if connection.features.has_select_for_update_skip_locked:
        due = due.select_for_update(skip_locked=True, of=("self",))
    claimed_until = OutboundMessage._meta.get_field("claimed_until").get_db_prep_value(now + CLAIM_TIMEOUT,
                                                                                       connection)
    with transaction.atomic(), connection.cursor() as cursor:
        select, params = due.query.sql_with_params()
        cursor.execute(f'UPDATE "{OutboundMessage._meta.db_table}" SET "status" = %s, "claimed_until" = %s, '
                       f'"attempts" = "attempts" + 1 WHERE "id" IN ({select}) RETURNING "id"',
                       [OutboundMessage.Status.SENDING, claimed_until, *params])
        return [row[0] for row in cursor.fetchall()]


def outbound_dispatch_due(*, limit: int = 50) -> int:
    """Send a batch of the due messages of hosted mailboxes this worker can claim, then one message
    of a connected mailbox; returns how many it handled. A connected mailbox's message goes alone,
    within CONNECTED_MAILBOX_SEND_SECONDS: its provider, a server its owner chose, never holds
    anyone else's mail. One message's failure never stops the others: it is retried on the
    schedule, then failed for good."""
    handled = _dispatch(_claim(limit, Mailbox.Kind.MANAGED))
    return handled + _dispatch(_claim(1, Mailbox.Kind.CONNECTED))


def _dispatch(claimed: list[int]) -> int:
    if not claimed:
        return 0
    messages = list(OutboundMessage.objects.filter(pk__in=claimed, status=OutboundMessage.Status.SENDING)
                    .select_related("mailbox", "account").order_by("due_at", "id"))
    keys = dkim_signing_keys_for({_signing_domain(m) for m in messages
                          if m.mailbox.is_managed or m.payload.get("via") == "platform"})
    attempts, renew_at = [], timezone.now() + CLAIM_TIMEOUT / 2
    providers: dict[int, Relay] = {}
    with Relay(local=deliver_if_hosted) as relay, ExitStack() as provider_sessions:
        for message in messages:
            if timezone.now() >= renew_at:
                renew_at = _renew(claimed)
            try:
                hop = relay if message.mailbox.is_managed else _connected_hop(message, relay, providers,
                                                                               provider_sessions)
                if hop is not None and (attempt := _attempt(message, hop, keys)):
                    attempts.append(attempt)
            except Exception as error:  # noqa: BLE001 - recorded on the message and in the log
                log.exception("dispatch of outbound message %s failed", message.pk)
                _retry_or_fail(message.pk, _internal_error(error))
    if _record(attempts):
        _keep_sent_copies([a for a in attempts if a.message.status == OutboundMessage.Status.SENT
                           and not a.message.sandbox])
    failed_sends_return()  # the owner hears at once; the return-failed-sends job retries what the store refused
    return len(claimed)


def _connected_hop(message: OutboundMessage, relay: Relay, providers: dict[int, Relay],
                   sessions: ExitStack) -> Relay | None:
    """Where a connected mailbox's message goes: its provider's submission server (one session per
    mailbox and batch), or our relay on a domain its account has verified; never our relay in a
    stranger's name. None when it cannot go at all (failed and saved here)."""
    mailbox = message.mailbox
    route = send_route(mailbox)
    if route == "platform":
        return relay
    if route is None:
        _fail(message, "554 5.7.1 Not sent: the connected mailbox has no submission server and its domain is not "
                       "verified by this account")
        return None
    if mailbox.pk not in providers:
        server = SubmissionServer.of_provider(connected_smtp_server(mailbox))
        deadline = sessions.enter_context(Deadline(settings.CONNECTED_MAILBOX_SEND_SECONDS))
        providers[mailbox.pk] = sessions.enter_context(Relay(server=server, deadline=deadline))
    return providers[mailbox.pk]


def _renew(ids: list[int]) -> datetime:
    """Hold the batch's claims longer (a slow relay): a lapsed claim would let another worker send
    again what this one handed over but has not recorded yet. Returns when to renew next."""
    now = timezone.now()
    OutboundMessage.objects.filter(pk__in=ids, status=OutboundMessage.Status.SENDING).update(
        claimed_until=now + CLAIM_TIMEOUT)
    return now + CLAIM_TIMEOUT / 2


def _claim_held(message: OutboundMessage) -> bool:
    """Whether this worker still holds its claim of the row, renewed when it is near its end; a
    lapsed claim another worker took since (its claim counted one more attempt) is never sent here."""
    now = timezone.now()
    if message.claimed_until is not None and now < message.claimed_until - CLAIM_MARGIN:
        return True
    held_until = now + CLAIM_TIMEOUT
    renewed = OutboundMessage.objects.filter(pk=message.pk, status=OutboundMessage.Status.SENDING,
                                             attempts=message.attempts).update(claimed_until=held_until)
    if not renewed:
        log.warning("outbound message %s not sent: its claim lapsed and another worker took it", message.pk)
        return False
    message.claimed_until = held_until
    return True


def outbound_next_due() -> datetime | None:
    """When the next waiting message falls due, so the worker wakes for it rather than polling."""
    Status = OutboundMessage.Status
    return OutboundMessage.objects.filter(status__in=[Status.QUEUED, Status.SCHEDULED]).order_by(
        "due_at").values_list("due_at", flat=True).first()


def _internal_error(error: Exception) -> str:
    return f"451 4.3.0 Internal error while sending ({error.__class__.__name__})"


def partner_mailbox_event_data(message: OutboundMessage) -> dict:
    payload = message.payload
    return {"message_id": str(message.message_id), "from": message.mailbox.address, "to": payload["to"],
            "cc": payload["cc"], "subject": payload["subject"],
            "scheduled_id": message.pk if message.is_held else None}


def _set_final(message: OutboundMessage, *, refused: list[dict], accepted: int, now: datetime) -> None:
    """The final state (sent or failed), on the object only."""
    message.payload = {**message.payload, "pending": [], "refused": refused, "accepted": accepted}
    message.status = OutboundMessage.Status.SENT if accepted else OutboundMessage.Status.FAILED
    message.sent_at = now if message.status == OutboundMessage.Status.SENT else None
    message.finished_at = now
    message.claimed_until = None


def _announcements(message: OutboundMessage) -> list[Raised]:
    """The events of a final state."""
    raised = []
    if message.status == OutboundMessage.Status.SENT:
        raised.append(Raised(message.account, "email.sent",
                             {**partner_mailbox_event_data(message), "sent_at": iso(message.finished_at)},
                             message.sandbox))
    if message.payload["refused"]:
        raised.append(Raised(message.account, "email.failed",
                             {**partner_mailbox_event_data(message), "failed_at": iso(message.finished_at),
                              "recipients": message.payload["refused"]}, message.sandbox))
    return raised


def _announce(message: OutboundMessage) -> None:
    """The events of a final state, in the caller's transaction."""
    emit_many(_announcements(message))


def _fail(message: OutboundMessage, reply: str) -> None:
    """Give up on every recipient still pending, with one reply that says why."""
    with transaction.atomic():
        message.last_error = reply
        refused = list(message.payload.get("refused", []))
        refused += [{"recipient": r, "reply": reply} for r in message.payload["pending"]]
        _set_final(message, refused=refused, accepted=message.payload.get("accepted", 0), now=timezone.now())
        _announce(message)
        message.save()
        send_failure_note(message)


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


def _signing_domain(message: OutboundMessage) -> str:
    """The domain whose DKIM key signs: the mailbox's, or for mail from the owner's own client the
    From address's (an alias may be on another domain of the account), so DMARC aligns."""
    return message.payload.get("signing_domain") or message.mailbox.address.partition("@")[2]


def _attempt(message: OutboundMessage, relay: Relay, keys: dict) -> Attempt | None:
    """Build, sign and hand over one claimed message; its new state is set, to be saved with the
    batch. None when it ended here (failed and saved on its own), or is another worker's now."""
    handed_over = message.payload.pop("handed_over", None)  # by a worker that stopped before recording it
    if message.attempts > MAX_ATTEMPTS and handed_over is None:  # claimed again and again, never finished
        _fail(message, f"554 5.3.0 Not sent: the worker stopped {MAX_ATTEMPTS} times while sending it")
        return None
    if rejected := message.payload.pop("rejected", None):  # held, then refused by its account (sending.held)
        _fail(message, rejected)
        return None
    mailbox = message.mailbox
    domain = mailbox.address.partition("@")[2]
    if not message.rfc_message_id:
        message.rfc_message_id = f"<{message.message_id}@{domain}>"
    try:
        if "submitted" in message.payload:  # made by the owner's own mail client (mailcore.sending.submission)
            raw = base64.b64decode(message.payload["submitted"])
            built = Composed(raw, read(raw, headers=False))
        else:
            built = compose(mailbox=mailbox, payload=message.payload, message_id=str(message.message_id),
                            rfc_message_id=message.rfc_message_id, track_opens=message.track_opens)
    except (ValueError, TypeError, LookupError) as error:  # cannot succeed on a later attempt
        log.warning("outbound message %s cannot be built: %s", message.message_id, error)
        _fail(message, f"554 5.6.0 Message could not be built: {error}")
        return None
    raw = built.raw
    if relay.server is None and handed_over is None and not message.sandbox and _held(message, raw):
        return None
    if relay.server is None:  # our relay: our DKIM signature (a provider signs its own)
        signing = _signing_domain(message)
        raw = dkim_sign(raw, domain_name=signing, keys=keys.get(signing.lower()))
        built = Composed(raw, built.summary)
    attempt = Attempt(message, built)
    pending = message.payload["pending"]
    refused: list[dict] = list(message.payload.get("refused", []))  # refusals of earlier attempts count too
    accepted = message.payload.get("accepted", 0)
    deferred_replies = []
    if message.sandbox:
        accepted, pending = len(pending), []  # the whole pipeline ran; only the SMTP hand-over is skipped
    else:
        # Bulk mail goes out with its signed return path, so its bounces name exactly this message.
        envelope_from = return_path_for(message) if message.payload.get("verp") else mailbox.address
        if handed_over is None:
            if not _claim_held(message):
                return None
            outcomes = relay.send(envelope_from, pending, raw)
            _note_hand_over(message, outcomes)
        else:
            outcomes = [Outcome(*answer) for answer in handed_over]
        attempt.outcomes = outcomes
        refused += [{"recipient": o.recipient, "reply": o.reply} for o in outcomes if o.status == "refused"]
        accepted += sum(1 for o in outcomes if o.accepted)
        pending = [o.recipient for o in outcomes if o.status == "deferred"]
        deferred_replies = [f"{o.recipient}: {o.reply}" for o in outcomes if o.status == "deferred"]
    now = timezone.now()
    if pending and message.attempts < MAX_ATTEMPTS:
        message.payload = {**message.payload, "pending": pending, "refused": refused, "accepted": accepted}
        message.status = OutboundMessage.Status.QUEUED
        message.due_at = now + RETRY_DELAYS[min(message.attempts - 1, len(RETRY_DELAYS) - 1)]
        message.last_error = "; ".join(deferred_replies)
        message.claimed_until = None
    else:
        refused += [{"recipient": r, "reply": "retries exhausted"} for r in pending]
        attempt.gave_up = list(pending)
        if pending:
            message.last_error = "; ".join(deferred_replies)
        _set_final(message, refused=refused, accepted=accepted, now=now)
    return attempt


def _held(message: OutboundMessage, raw: bytes) -> bool:
    """Whether the screener keeps this send back (held and saved here, its account told); asked once
    per send, before its first hand-over through our relay (a retry of deferred recipients, or a
    send its account released, goes on)."""
    if message.payload.get("screened"):
        return False
    hold = outbound_screening.answer(None, message=message, raw=raw, origin=send_origin(message))
    message.payload["screened"] = True  # saved with the attempt's state
    if hold is None:
        return False
    send_hold(message, hold)
    return True


def _note_hand_over(message: OutboundMessage, outcomes: list[Outcome]) -> None:
    """The relay's answers on the row, committed before anything else happens to the batch; the
    batch's record (which writes the payload without them) clears the note. Only the answers travel:
    the database sets the one key in the stored payload (bodies and attachments stay where they are)."""
    answers = json.dumps([[outcome.recipient, outcome.status, outcome.reply] for outcome in outcomes])
    table = connection.ops.quote_name(OutboundMessage._meta.db_table)
    if connection.vendor == "postgresql":
        # One round trip that does not wait for the WAL flush (synchronous_commit off for this
        # statement's own transaction): a killed worker loses nothing committed; only a crash of
        # PostgreSQL itself could lose the note, and with it the batch's record, costing one copy more.
        update = (f"UPDATE {table} SET payload = jsonb_set(payload, '{{handed_over}}', %s::jsonb) "
                  "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS unflushed")
    else:
        update = f"UPDATE {table} SET payload = json_set(payload, '$.handed_over', json(%s))"
    with connection.cursor() as cursor:
        cursor.execute(f"{update} WHERE id = %s", [answers, message.pk])


def _record(attempts: list[Attempt]) -> bool:
    """The batch's new states, events and outcome reports in one transaction. Should that fail,
    each message goes back to its retry schedule (as an error while sending one would)."""
    attempts = _still_held(attempts)
    if not attempts:
        return True
    try:
        with transaction.atomic():
            _save_states([attempt.message for attempt in attempts])
            emit_many([raised for attempt in attempts if attempt.message.status != OutboundMessage.Status.QUEUED
                       for raised in _announcements(attempt.message)])
            for attempt in attempts:
                if attempt.message.status != OutboundMessage.Status.QUEUED:
                    send_failure_note(attempt.message)
            for attempt in attempts:
                if attempt.message.payload.get("verp"):
                    _report_outcomes(attempt.message, attempt.outcomes, attempt.gave_up)
    except Exception as error:  # noqa: BLE001 - recorded on the messages and in the log
        log.exception("recording a batch of %s outbound messages failed", len(attempts))
        for attempt in attempts:
            _retry_or_fail(attempt.message.pk, _internal_error(error))
        return False
    return True


def _still_held(attempts: list[Attempt]) -> list[Attempt]:
    """The attempts whose rows this worker still holds: a row another worker claimed since (a
    lapsed claim) is that worker's to record, with the answers noted on it."""
    held = set(OutboundMessage.objects.filter(pk__in=[a.message.pk for a in attempts],
                                              status=OutboundMessage.Status.SENDING)
               .values_list("pk", "attempts"))
    kept = [a for a in attempts if (a.message.pk, a.message.attempts) in held]
    if len(kept) < len(attempts):
        log.warning("outbound messages %s not recorded here: another worker claimed them since",
                    [a.message.pk for a in attempts if a not in kept])
    return kept


def _save_states(messages: list[OutboundMessage]) -> None:
    """ATTEMPT_FIELDS of each row: one statement sent for all rows (psycopg pipelines executemany),
    several times cheaper than bulk_update's CASE expressions."""
    fields = [OutboundMessage._meta.get_field(name) for name in ATTEMPT_FIELDS]
    assignments = ", ".join(f'"{field.column}" = %s' for field in fields)
    with connection.cursor() as cursor:
        cursor.executemany(
            f'UPDATE "{OutboundMessage._meta.db_table}" SET {assignments} WHERE "id" = %s',
            [[field.get_db_prep_save(getattr(message, field.attname), connection) for field in fields] + [message.pk]
             for message in messages])


def _keep_sent_copies(attempts: list[Attempt]) -> None:
    """A copy of each sent message in its mailbox's Sent folder, one write per mailbox; a failure
    costs the copies, never the sends."""
    by_mailbox = defaultdict(list)
    for attempt in attempts:
        by_mailbox[attempt.message.mailbox_id].append(attempt)
    for group in by_mailbox.values():
        store, raws = store_for(group[0].message.mailbox), [attempt.built.raw for attempt in group]
        try:
            if isinstance(store, EmbeddedStore):
                store.append_many("Sent", raws, flags=("\\Seen",), summaries=[a.built.summary for a in group])
            else:
                for raw in raws:
                    store.append("Sent", raw, flags=("\\Seen",))
        except StoreError:
            log.warning("could not keep copies of %s in Sent", [str(a.message.message_id) for a in group],
                        exc_info=True)

