"""Deliver one inbound message to its recipients: forward through live rules, store the copies (one
store call for all of them), emit events (one transaction for all of them).

Nothing here is acknowledged before it is safe: forwards are handed to the relay first, then the
copy is stored, then the events are written; any temporary failure answers 4xx so the sender
retries (at worst a forward target gets a duplicate, never a lost message).

Mail from outside is screened first (mailcore.inbound.screening): each recipient's verdict says
whether its copy goes to the Inbox (forwards and the owner's rules run), to Junk (stored with the
verdict header Dovecot's sieve_before and the embedded store file by; no forward, no rule), or is
answered without a copy (held by the screener, refused, deferred).

A forward leaves with an SRS envelope sender on the forwarding mailbox's domain and, for screened
mail, an ARC set of our results (mailcore.outbound.forwarded); a bounce to such an SRS address
goes back to the original sender with the null sender.
"""
import logging
from dataclasses import dataclass
from functools import cached_property

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from mailcore.events.services import Raised, emit_many
from mailcore.inbound.parsing import InboundSummary, fallback_message_id, read_or_empty, summarise
from mailcore.inbound.recipients import (NOT_HOSTED, DeliveryPlan, Rejection, ReportPlan, Resolution,
                                         ReturnPathPlan, SrsPlan, resolve)
from mailcore.inbound.reports import report_deliver
from mailcore.inbound.screening import (INBOX, SCREENING_UNAVAILABLE, Action, Arriving, Screening, Verdict,
                                        remove_our_headers, screening)
from mailcore.inbound.threads import is_reply, thread_assign
from mailcore.inbound.usage import WARNING_PERCENT, usage_after
from mailcore.mailboxes.models import Mailbox
from mailcore.outbound.forwarded import forward_prepared
from mailcore.outbound.relay import relay
from mailcore.outbound.feedback import Feedback, feedback_from, feedback_record, return_path_record
from mailcore.store.authresults import HEADER as AUTHENTICATION_RESULTS
from mailcore.store.authresults import authentication_summary
from mailcore.store.base import Delivered, DeliveryRefused, QuotaExceeded, StoreError, deliver_many, with_headers
from mailcore.store.factory import store_for
from mailcore.store.reading import header_values_in
from mailcore.timefmt import iso
from mailcore.rules.delivery import filters_apply, filters_run_here, vacation_answered, vacation_reply_for

log = logging.getLogger(__name__)

MIB = 1024 * 1024
FORWARDING_LOOP = Rejection(554, "5.4.6", "Mail forwarding loop detected")
STORE_UNAVAILABLE = Rejection(451, "4.3.0", "Mail store unavailable, try again later")
MAILBOX_FULL = Rejection(552, "5.2.2", "Mailbox full")
FORWARD_DEFERRED = Rejection(451, "4.4.1", "Forwarding relay unavailable, try again later")


@dataclass(frozen=True)
class DeliveryResult:
    recipient: str
    reply: str  # this recipient's SMTP/LMTP reply
    mailbox: str | None = None
    stored: bool = False
    uid: int | None = None  # UID in INBOX when the store tells it (embedded); None otherwise
    forwarded_to: tuple[str, ...] = ()

    @property
    def code(self) -> int:
        return int(self.reply[:3])

    @property
    def temporary(self) -> bool:
        return 400 <= self.code < 500


def _header_block(raw: bytes) -> bytes:
    end = min((index for index in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if index >= 0), default=len(raw))
    return raw[:end]


def delivered_to(raw: bytes) -> list[str]:
    """Addresses in the Delivered-To headers (trace of earlier deliveries and forwards)."""
    unfolded = _header_block(raw).replace(b"\r\n", b"\n").replace(b"\n ", b" ").replace(b"\n\t", b" ")
    found = []
    for line in unfolded.split(b"\n"):
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"delivered-to":
            found.append(value.decode("utf-8", errors="replace").strip().strip("<>").lower())
    return found


@dataclass(frozen=True)
class Arrival:
    """What delivery reads from a message, read once for all its recipients."""

    raw: bytes
    trace: list[str]  # Delivered-To addresses
    summary: InboundSummary
    message_id: str  # its own, or one derived from the content when it has none
    added: list[tuple[str, str]]  # the Message-ID header the stored copy gains when it had none
    content_type: str | None


def arrival(raw: bytes) -> Arrival:
    message = read_or_empty(raw)  # its content type spares the bounce check a parse
    summary = summarise(message)
    message_id = summary.message_id or fallback_message_id(raw, settings.MAIL_HOST)
    added = [] if summary.message_id else [("Message-ID", message_id)]
    return Arrival(raw, delivered_to(raw), summary, message_id, added, message.content_type or None)


def deliver_if_hosted(raw: bytes, recipient: str, envelope_from: str) -> str | None:
    """The relay's local delivery (embedded mode): this recipient's reply, or None if not hosted here."""
    plan = resolve(recipient)
    if plan is NOT_HOSTED:
        return None
    return deliver(raw, recipient, envelope_from, plan=plan).reply


def deliver(raw: bytes, recipient: str, envelope_from: str, *,
            plan: Resolution | None = None) -> DeliveryResult:
    """Deliver to one recipient; `plan` is its resolution when the caller already has it (RCPT)."""
    message = _Message(raw, envelope_from)
    begun = _begin(message, recipient, plan)
    if isinstance(begun, DeliveryResult):
        return begun
    [copy] = _store_copies(message, [begun])
    settled = _settle(message, begun, copy)
    if isinstance(settled, DeliveryResult):
        return settled
    return _announce_alone(message, settled)


def deliver_each(raw: bytes, envelope_from: str,
                 plans: list[tuple[str, Resolution | None]],
                 *, arriving: Arriving | None = None) -> list[DeliveryResult]:
    """Each recipient's result, in order. The message is read once, each distinct copy is stored with
    one store call (one LMTP transaction with Dovecot) and its events written in one transaction;
    forwards and owner rules stay per recipient, and a recipient whose delivery fails answers 451 alone.
    With `arriving` (mail from outside) the message is screened first."""
    screened = _screened(raw, arriving, plans) if arriving is not None else None
    message = _Message(raw, envelope_from, screened)
    begun = [_guarded(recipient, _begin, message, recipient, plan) for recipient, plan in plans]
    pending = [step for step in begun if isinstance(step, _Pending)]
    try:
        copies = iter(_store_copies(message, pending))
    except Exception as error:  # _settle answers 451 for each that was to keep a copy; forwards are already out
        copies = iter([error if step.keeps_copy else None for step in pending])
    settled = [step if isinstance(step, DeliveryResult)
               else _guarded(step.recipient, _settle, message, step, next(copies)) for step in begun]
    return _announced(message, settled)


def _screened(raw: bytes, arriving: Arriving, plans: list[tuple[str, object]]) -> Screening | Exception | None:
    """The screener's answer for the hosted recipients, or the exception it raised (each of them
    is then answered 451: the sender retries, nothing is lost)."""
    mailboxes = {recipient: plan.mailbox for recipient, plan in plans if isinstance(plan, DeliveryPlan)}
    if not mailboxes:
        return None
    try:
        return screening.answer(None, raw=raw, arriving=arriving, mailboxes=mailboxes)
    except Exception as error:
        log.exception("screening of mail for %s failed", list(mailboxes))
        return error


class _Message:
    """An arriving message on its way to its recipients, read once when a hosted recipient needs it."""

    def __init__(self, raw: bytes, envelope_from: str, screened: Screening | Exception | None = None):
        self.raw = raw
        self.envelope_from = envelope_from
        self.screened = screened

    @cached_property
    def arrived(self) -> Arrival:
        return arrival(self.raw)

    @cached_property
    def copy(self) -> bytes:
        """What a mailbox keeps when the message was not screened: it, with a Message-ID when it had none,
        and without what only a screener of ours writes (another owner's submission could otherwise
        file itself in Junk or show sender checks of ours it never had)."""
        return with_headers(remove_our_headers(self.raw), self.arrived.added)

    @cached_property
    def authentication(self) -> dict[str, str] | None:
        """The sender checks the screener wrote into the copies ({spf, dkim, dmarc, arc}), read from
        the screened bytes: never from what arrived (a forged header of ours is removed by screening);
        None for mail that was not screened."""
        if not isinstance(self.screened, Screening):
            return None
        return authentication_summary(header_values_in(_header_block(self.screened.raw), AUTHENTICATION_RESULTS))

    def verdict(self, recipient: str) -> Verdict:
        if isinstance(self.screened, Exception):
            return Verdict(Action.DEFER, SCREENING_UNAVAILABLE)
        return self.screened.verdict(recipient) if self.screened is not None else INBOX

    def copy_for(self, verdict: Verdict) -> bytes:
        """The copy a verdict stores: the screened message (our headers in, forged ones out) with
        the verdict's headers and a Message-ID when it had none."""
        if not isinstance(self.screened, Screening):
            return self.copy
        return with_headers(self.screened.raw, [*verdict.headers, *self.arrived.added])


@dataclass(frozen=True)
class _Pending:
    """A recipient whose forwards are done and whose copy (if it keeps one) is not stored yet."""

    recipient: str
    plan: DeliveryPlan
    forwarded: tuple[str, ...]
    verdict: Verdict = INBOX
    copy: bytes = b""  # what its mailbox keeps

    @property
    def keeps_copy(self) -> bool:
        return self.plan.keep_copy or not self.forwarded  # every forward refused: never lose mail


@dataclass(frozen=True)
class _Settled:
    """A recipient whose copy is stored (or whose mail was forwarded): only its events are left."""

    recipient: str
    mailbox: Mailbox
    stored: "_Stored | None"
    forwarded: tuple[str, ...]
    feedback: Feedback | None


def _guarded(recipient: str, step, *args) -> DeliveryResult | _Pending | _Settled:
    try:
        return step(*args)
    except Exception:
        log.exception("delivery to %s failed", recipient)
        return DeliveryResult(recipient, STORE_UNAVAILABLE.reply)


def _begin(message: _Message, recipient: str, plan: Resolution | None
           ) -> DeliveryResult | _Pending:
    """Everything before the copy is stored: the resolution, the loop check, the forwards."""
    plan = plan or resolve(recipient)
    if isinstance(plan, Rejection):
        return DeliveryResult(recipient, plan.reply)
    if isinstance(plan, ReturnPathPlan):
        return _return_path(message.raw, recipient, plan)
    if isinstance(plan, SrsPlan):
        return _bounced_back(message.raw, recipient, plan)
    if isinstance(plan, ReportPlan):
        return DeliveryResult(recipient, report_deliver(message.raw, plan, message.envelope_from))
    address = plan.mailbox.address
    verdict = message.verdict(recipient)
    if verdict.action in (Action.HELD, Action.REFUSE, Action.DEFER):
        log.info("%s for %s not stored: %s (%s)", message.arrived.message_id, recipient, verdict.action,
                 verdict.reply)
        return DeliveryResult(recipient, verdict.reply, address)
    if address.lower() in message.arrived.trace:
        return DeliveryResult(recipient, FORWARDING_LOOP.reply, address)
    copy = message.copy_for(verdict)
    if not _automations_run(verdict):  # Junk, or unscanned: never forwarded (point 8 of issue 33)
        return _Pending(recipient, plan, (), verdict, copy)
    forwarded = _forward(plan, with_headers(copy, [("Delivered-To", address)]), message.envelope_from)
    if isinstance(forwarded, Rejection):
        return DeliveryResult(recipient, forwarded.reply, address)
    return _Pending(recipient, plan, forwarded, verdict, copy)


def _automations_run(verdict: Verdict) -> bool:
    """Forwards, vacation replies and filters only for mail the screener let into the Inbox."""
    return verdict.action == Action.INBOX and verdict.automations


def _store_copies(message: _Message, pending: list[_Pending]) -> list[Delivered | Exception | None]:
    """Each pending recipient's stored copy (None when it keeps none): one store call for each
    distinct copy (an Inbox copy and a Junk copy differ by their verdict headers), or one per repeat
    when several recipients lead to the same mailbox."""
    outcomes: dict[int, Delivered | Exception] = {}
    copies: dict[bytes, list[tuple[int, _Pending]]] = {}
    for index, step in enumerate(pending):
        if step.keeps_copy:
            copies.setdefault(step.copy or message.copy, []).append((index, step))
    for copy, steps in copies.items():
        for batch in _distinct_mailboxes(steps):
            stores = {step.plan.mailbox.address: store_for(step.plan.mailbox) for _, step in batch}
            delivered = deliver_many(stores, copy, envelope_from=message.envelope_from)
            outcomes.update((index, delivered[step.plan.mailbox.address]) for index, step in batch)
    return [outcomes.get(index) for index in range(len(pending))]


def _distinct_mailboxes(steps: list[tuple[int, _Pending]]) -> list[list[tuple[int, _Pending]]]:
    """Batches in which each mailbox appears once: two recipients for one mailbox (an alias and its
    target) still get two copies, as two deliveries."""
    batches: list[list[tuple[int, _Pending]]] = []
    for index, step in steps:
        free = next((batch for batch in batches
                     if all(other.plan.mailbox.address != step.plan.mailbox.address for _, other in batch)), None)
        if free is None:
            batches.append(free := [])
        free.append((index, step))
    return batches


def _settle(message: _Message, step: _Pending, copy: Delivered | Exception | None) -> DeliveryResult | _Settled:
    """Everything after the copy but the events: its outcome, the owner's rules, a report it carries."""
    recipient, mailbox, forwarded = step.recipient, step.plan.mailbox, step.forwarded
    stored = None if copy is None else _stored(mailbox, copy)
    if isinstance(stored, Rejection):
        if not forwarded or stored.temporary:
            return DeliveryResult(recipient, stored.reply, mailbox.address)
        log.warning("%s forwarded but no copy kept in %s: %s", message.arrived.message_id, mailbox.address,
                    stored.reply)
        stored = None
    if stored and stored.uid is not None and filters_run_here(mailbox) and _automations_run(step.verdict):
        _owner_rules(mailbox, step.copy or message.copy, message.envelope_from, stored.uid)
    arrived = message.arrived
    return _Settled(recipient, mailbox, stored, forwarded,
                    _feedback(mailbox, message.raw, arrived.content_type, arrived.trace))


def _announced(message: _Message, steps: list[DeliveryResult | _Settled]) -> list[DeliveryResult]:
    """Each recipient's result once its events are written: all of them in one transaction, or, if
    that fails, each recipient's in its own, so a failure stays that recipient's 451."""
    settled = [step for step in steps if isinstance(step, _Settled)]
    if len(settled) > 1:
        try:
            _announce(message, settled)
        except Exception:
            log.exception("events of %s not written together; writing each recipient's alone",
                          message.arrived.message_id)
        else:
            return [step if isinstance(step, DeliveryResult) else _delivered(message, step) for step in steps]
    return [step if isinstance(step, DeliveryResult) else _guarded(step.recipient, _announce_alone, message, step)
            for step in steps]


def _announce_alone(message: _Message, settled: _Settled) -> DeliveryResult:
    _announce(message, [settled])
    return _delivered(message, settled)


def _delivered(message: _Message, settled: _Settled) -> DeliveryResult:
    recipient, mailbox, stored, forwarded = settled.recipient, settled.mailbox, settled.stored, settled.forwarded
    log.info("delivered %s for %s: stored=%s forwarded=%s", message.arrived.message_id, recipient, bool(stored),
             forwarded or "-")
    if stored:
        return DeliveryResult(recipient, "250 2.0.0 Delivered", mailbox.address, True, stored.uid, forwarded)
    reply = f"250 2.1.5 Forwarded to {len(forwarded)} address(es)"
    return DeliveryResult(recipient, reply, mailbox.address, False, None, forwarded)


def _return_path(raw: bytes, recipient: str, plan: ReturnPathPlan) -> DeliveryResult:
    """Mail to a bulk send's signed return path: a bounce or complaint is recorded against that send;
    anything else (auto-replies, which go to the return path too) is accepted and dropped."""
    feedback = feedback_from(raw, soft=True)
    if feedback is None:
        log.info("mail to the return path of %s is not a report; dropped", plan.message.message_id)
        return DeliveryResult(recipient, "250 2.0.0 Accepted")
    return_path_record(feedback=feedback, message=plan.message)
    return DeliveryResult(recipient, "250 2.0.0 Report recorded")


def _bounced_back(raw: bytes, recipient: str, plan: SrsPlan) -> DeliveryResult:
    """Mail to the SRS address of a forward (a bounce, an auto-reply): handed on unchanged to the
    sender the address names, with the null sender (nothing answers it back); the next hop's refusal
    or deferral is this recipient's answer."""
    [outcome] = relay("", [plan.bounce_to], raw, local=deliver_if_hosted)
    if not outcome.accepted:
        log.info("mail to %s not returned to %s: %s", recipient, plan.bounce_to, outcome.reply)
        return DeliveryResult(recipient, outcome.reply)
    return DeliveryResult(recipient, "250 2.0.0 Returned to the original sender")


@dataclass(frozen=True)
class _Stored:
    uid: int | None
    size: int  # bytes of the copy in the mailbox, as the inbox listing reports it
    used_before: int | None  # bytes; None when the store could not tell
    used_after: int | None


def _forward(plan: DeliveryPlan, message: bytes, envelope_from: str) -> tuple[str, ...] | Rejection:
    """The message as it arrived (with our trace and results), sealed with ARC by the mailbox's
    domain; envelope sender: the original one rewritten by SRS onto that domain, so the next hop's
    SPF passes and a bounce comes back to us for the original sender."""
    if not plan.forward_to:
        return ()
    sender, sealed = forward_prepared(message, envelope_from=envelope_from,
                                      forwarding_domain=plan.mailbox.address.rpartition("@")[2])
    outcomes = relay(sender, list(plan.forward_to), sealed, local=deliver_if_hosted)
    if any(outcome.status == "deferred" for outcome in outcomes):
        return FORWARD_DEFERRED
    for outcome in outcomes:
        if not outcome.accepted:
            log.warning("forward from %s to %s refused: %s", plan.mailbox.address, outcome.recipient, outcome.reply)
    return tuple(outcome.recipient for outcome in outcomes if outcome.accepted)


def _stored(mailbox: Mailbox, copy: Delivered | Exception) -> _Stored | Rejection:
    """The outcome of the copy in the mailbox (Dovecot's LMTP or the embedded store)."""
    if isinstance(copy, Delivered):
        return _with_usage(mailbox, copy.uid, copy.size)
    if isinstance(copy, QuotaExceeded):
        return MAILBOX_FULL
    if isinstance(copy, DeliveryRefused):
        return _rejection(copy.reply)
    if isinstance(copy, StoreError):
        log.warning("store refused mail for %s: %s", mailbox.address, copy)
        return STORE_UNAVAILABLE
    raise copy


def _owner_rules(mailbox: Mailbox, raw: bytes, envelope_from: str, uid: int) -> None:
    """The owner's vacation reply and filters where the store does not run them (the embedded store;
    Dovecot's Pigeonhole runs the same rows as Sieve). The message is stored: nothing here fails it."""
    try:
        outgoing = vacation_reply_for(mailbox=mailbox, raw=raw, envelope_from=envelope_from)
        if outgoing is not None:
            [outcome] = relay("", [outgoing.recipient], outgoing.raw, local=deliver_if_hosted)
            if outcome.accepted:
                vacation_answered(outgoing=outgoing)
            else:
                log.warning("vacation reply of %s to %s not sent: %s", mailbox.address, outgoing.recipient,
                            outcome.reply)
        filters_apply(mailbox=mailbox, uid=uid, raw=raw)
    except Exception:  # the copy is safe in the Inbox; a filter or reply must never lose it
        log.exception("filters or vacation reply of %s not applied", mailbox.address)


def _with_usage(mailbox: Mailbox, uid: int | None, size: int) -> _Stored:
    try:
        before, after = usage_after(size, read=store_for(mailbox).storage_used)
    except (StoreError, OSError) as error:  # the message is stored; only the quota warning is skipped
        log.warning("storage of %s unknown after delivery: %s", mailbox.address, error)
        return _Stored(uid, size, None, None)
    return _Stored(uid, size, before, after)


def _feedback(mailbox: Mailbox, raw: bytes, content_type: str, trace: list[str]) -> Feedback | None:
    """A bounce or complaint about a send; a copy forwarded by a mailbox of the account was recorded there."""
    try:
        feedback = feedback_from(raw, content_type=content_type)
        if feedback and Mailbox.objects.filter(account=mailbox.account, address__in=trace).exists():
            return None
        return feedback
    except Exception:  # reporting a bounce never costs the delivery
        log.exception("feedback in mail for %s not read", mailbox.address)
        return None


def _record_feedback(mailbox: Mailbox, feedback: Feedback) -> None:
    try:
        with transaction.atomic():  # a savepoint: a failure takes back only the feedback events
            feedback_record(feedback=feedback, account=mailbox.account)
    except Exception:
        log.exception("feedback in mail for %s not recorded", mailbox.address)


def _announce(message: _Message, settled: list[_Settled]) -> None:
    """The events of the message's recipients, written together once the message is safe: one
    thread assignment per account and one batch of events."""
    now = timezone.now()
    summary, message_id = message.arrived.summary, message.arrived.message_id
    threads: dict[int, str] = {}  # account id -> the message's thread in that account
    with transaction.atomic():
        raised = []
        for step in settled:
            account = step.mailbox.account
            if step.stored and account.pk not in threads:
                threads[account.pk] = thread_assign(account=account, message_id=summary.message_id or None,
                                                    in_reply_to=summary.in_reply_to,
                                                    references=summary.references, subject=summary.subject)
            raised.extend(_events(step, summary, message_id, now, threads.get(account.pk), message.authentication))
        emit_many(raised)
        for step in settled:
            if step.feedback:
                _record_feedback(step.mailbox, step.feedback)


def _events(settled: _Settled, summary: InboundSummary, message_id: str, now, thread: str | None,
            authentication: dict[str, str] | None) -> list[Raised]:
    """One recipient's events: received when stored, one per forward, the quota warning when crossed."""
    mailbox, stored, account = settled.mailbox, settled.stored, settled.mailbox.account
    raised = []
    if stored:
        raised.append(Raised(account, "email.received",
                             _received_data(mailbox, summary, message_id, now, size=stored.size, thread=thread,
                                            authentication=authentication)))
    raised.extend(Raised(account, "email.forwarded", {
        "mailbox": mailbox.address, "forward_to": target, "message_id": message_id,
        "forwarded_at": iso(now, timespec="seconds"),
    }) for target in settled.forwarded)
    if stored and stored.used_after is not None and _crossed_warning(
        stored.used_before, stored.used_after, limit=mailbox.quota_mb * MIB
    ):
        raised.append(Raised(account, "mailbox.quota_reached", _quota_data(mailbox, stored.used_after)))
    return raised


def _rejection(reply: str) -> Rejection:
    code, _, rest = reply.partition(" ")
    status, _, text = rest.partition(" ")
    if not status[:1].isdigit():
        status, text = ("4.3.0" if code.startswith("4") else "5.3.0"), rest
    return Rejection(int(code), status, text)


def _crossed_warning(before: int, after: int, *, limit: int) -> bool:
    """True for the one message that takes usage past 90% of the quota, not for every one after it."""
    return limit > 0 and before * 100 <= limit * WARNING_PERCENT < after * 100


def _received_data(mailbox: Mailbox, summary: InboundSummary, message_id: str, now, *, size: int,
                   thread: str, authentication: dict[str, str] | None) -> dict:
    """size_bytes is the stored copy's size (with its trace headers), the inbox listing's `size`;
    authentication is our Authentication-Results in the stored copy (None when it carries none)."""
    return {
        "message_id": message_id,
        "mailbox": mailbox.address,
        "from": summary.from_,
        "subject": summary.subject,
        "received_at": iso(now, timespec="seconds"),
        "thread_id": thread,
        "in_reply_to": summary.in_reply_to,
        "references": summary.references,
        "is_reply": is_reply(in_reply_to=summary.in_reply_to, references=summary.references),
        "preview": summary.preview,
        "has_attachments": summary.has_attachments,
        "size_bytes": size,
        "authentication": authentication,
    }


def _quota_data(mailbox: Mailbox, used: int) -> dict:
    limit = mailbox.quota_mb * MIB
    return {
        "mailbox": mailbox.address,
        "used_mb": round(used / MIB, 2),
        "limit_mb": mailbox.quota_mb,
        "percentage": round(used * 100 / limit, 1),
    }
