"""The quarantine: messages held for a mailbox instead of delivered, kept (bounded in days and
size) until the owner, its partner or the operator releases or deletes them.

Release delivers the message once to the Inbox through the mailbox's store (an IMAP APPEND to
INBOX with Dovecot, a row in INBOX in the embedded store): never through LMTP and Sieve, so it can
never be filed back into Junk, and without our verdict headers. Exactly once: the row is claimed
with one conditional UPDATE inside the transaction that appends the copy and writes the event, so
of two concurrent releases one delivers and the other finds it released.
"""
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode
from mailcore.events.services import emit
from mailcore.inbound.screening import VERDICT_HEADER
from mailcore.mailboxes.models import Mailbox
from mailcore.store.factory import store_for
from mailcore.store.reading import header, parse_headers
from mailcore.timefmt import iso
from protection.models import Quarantined, SenderRule

log = logging.getLogger(__name__)

MIB = 1024 * 1024
# Headers a released copy loses: it is going to the Inbox, whatever the screener thought of it.
DROPPED_ON_RELEASE = (VERDICT_HEADER.lower(), "x-spam-action")


class QuarantineGone(DomainError):
    """The message was already released or deleted (or the retention removed it)."""

    code = ErrorCode.CONFLICT


@dataclass(frozen=True)
class Released:
    item: Quarantined
    uid: int | None  # its UID in INBOX
    allowed: SenderRule | None  # the allow rule written with it, when asked


def quarantine_expires_at(item: Quarantined) -> datetime:
    return item.created_at + timedelta(days=settings.QUARANTINE_DAYS)


def quarantine_keep(*, mailbox: Mailbox, raw: bytes, envelope_from: str, score: float, reasons: list[str],
                    symbols: dict, virus: str = "") -> Quarantined:
    """Keep a message for `mailbox` instead of delivering it, and say so (`email.quarantined`), in
    one transaction; the mailbox's oldest waiting messages make room when it is over its size."""
    headers = parse_headers(raw)
    with transaction.atomic():
        item = Quarantined.objects.create(
            mailbox=mailbox, raw=raw, size=len(raw), envelope_from=envelope_from[:320],
            from_header=header(headers, "From")[:998], subject=header(headers, "Subject")[:998],
            message_id=header(headers, "Message-ID")[:998], score=float(score), reasons=list(reasons),
            symbols=_plain(symbols), virus=virus[:200])
        emit(account=mailbox.account, name="email.quarantined", data=quarantined_data(item))
        _make_room(mailbox, keep=item.pk)
    return item


def _plain(symbols: dict) -> dict:
    """Symbols as JSON: rspamd's Symbol objects (score, description, options) or plain values."""
    plain = {}
    for name, symbol in (symbols or {}).items():
        if isinstance(symbol, (int, float)):
            plain[name] = {"score": float(symbol)}
        elif isinstance(symbol, dict):
            plain[name] = symbol
        else:
            plain[name] = {key: getattr(symbol, key) for key in ("score", "description", "options")
                           if hasattr(symbol, key)}
            if "options" in plain[name]:
                plain[name]["options"] = list(plain[name]["options"] or [])
    return plain


def quarantined_data(item: Quarantined) -> dict:
    """What email.quarantined says, and what every list shows of a held message."""
    return {
        "id": item.public_id,
        "mailbox": item.mailbox.address,
        "message_id": item.message_id,
        "from": item.from_header,
        "envelope_from": item.envelope_from,
        "subject": item.subject,
        "score": round(item.score, 2),
        "reasons": item.reasons,
        "virus": item.virus or None,
        "size_bytes": item.size,
        "quarantined_at": iso(item.created_at, timespec="seconds"),
        "expires_at": iso(quarantine_expires_at(item), timespec="seconds"),
    }


def release_copy(raw: bytes) -> bytes:
    """The message as the Inbox gets it: without our verdict headers (folded lines included)."""
    newline = b"\r\n" if b"\r\n" in raw[:4096] else b"\n"
    end = raw.find(newline * 2)
    head, body = (raw, b"") if end < 0 else (raw[:end + len(newline)], raw[end + len(newline):])
    kept, dropping = [], False
    for line in head.split(newline):
        if line[:1] in (b" ", b"\t") and line.strip():
            if not dropping:
                kept.append(line)
            continue
        name = line.split(b":", 1)[0].strip().lower().decode("latin-1")
        dropping = b":" in line and name in DROPPED_ON_RELEASE
        if not dropping:
            kept.append(line)
    return newline.join(kept) + body


def quarantine_release(*, item: Quarantined, by: str, allow_sender: bool = False) -> Released:
    """Deliver a held message once to the mailbox's Inbox, and allow its sender there when asked.
    A second release (or one of a deleted message) is refused with QuarantineGone; a store that
    cannot take it leaves the message waiting and raises what the store raised."""
    now = timezone.now()
    with transaction.atomic():
        claimed = Quarantined.objects.filter(pk=item.pk, released_at__isnull=True, deleted_at__isnull=True).update(
            released_at=now, released_by=by[:200])
        if not claimed:
            raise QuarantineGone("This message was already released or deleted.")
        item = Quarantined.objects.select_related("mailbox__account").get(pk=item.pk)
        allowed = _allow(item) if allow_sender else None
        uid = store_for(item.mailbox).append("INBOX", release_copy(bytes(item.raw)))
        emit(account=item.mailbox.account, name="email.released", data={
            **quarantined_data(item), "released_at": iso(now, timespec="seconds"), "released_by": item.released_by,
            "sender_allowed": allowed.sender if allowed else None})
    log.info("released %s for %s by %s", item.public_id, item.mailbox.address, by)
    return Released(item, uid, allowed)


ACTIONS = ("release", "release_allow", "delete")


def quarantine_act(*, item: Quarantined, action: str, by: str) -> Released | None:
    """One of the three buttons every quarantine list has (owner, partner, operator): release,
    release and allow the sender, or delete. The release when there was one."""
    if action == "delete":
        quarantine_delete(item=item, by=by)
        return None
    if action in ("release", "release_allow"):
        return quarantine_release(item=item, by=by, allow_sender=action == "release_allow")
    raise ValueError(f"no quarantine action {action!r}")


def sender_of(item: Quarantined) -> str:
    """The address an allow rule names: the From header's, else the envelope sender."""
    from email.utils import parseaddr

    address = parseaddr(item.from_header)[1] or item.envelope_from
    return address.strip().lower()


def _allow(item: Quarantined) -> SenderRule | None:
    sender = sender_of(item)
    if not sender or "@" not in sender:
        return None
    rule, _ = SenderRule.objects.update_or_create(mailbox=item.mailbox, sender=sender,
                                                  defaults={"kind": SenderRule.Kind.ALLOW})
    return rule


def quarantine_delete(*, item: Quarantined, by: str) -> None:
    """Forget a held message's content for good; the row stays a while as the record of it."""
    deleted = Quarantined.objects.filter(pk=item.pk, released_at__isnull=True, deleted_at__isnull=True).update(
        deleted_at=timezone.now(), raw=b"", released_by=by[:200])
    if not deleted:
        raise QuarantineGone("This message was already released or deleted.")


def _make_room(mailbox: Mailbox, *, keep: int | None = None) -> int:
    """Drop the mailbox's oldest waiting messages while it holds more than QUARANTINE_MAX_MB."""
    limit = settings.QUARANTINE_MAX_MB * MIB
    waiting = Quarantined.objects.filter(mailbox=mailbox, released_at__isnull=True, deleted_at__isnull=True)
    total = waiting.aggregate(total=Sum("size"))["total"] or 0
    dropped = []
    if total > limit:
        for pk, size in waiting.exclude(pk=keep).order_by("created_at", "pk").values_list("pk", "size"):
            dropped.append(pk)
            total -= size
            if total <= limit:
                break
    if dropped:
        Quarantined.objects.filter(pk__in=dropped).delete()
        log.info("quarantine of %s over %s MB: %d oldest dropped", mailbox.address, settings.QUARANTINE_MAX_MB,
                 len(dropped))
    return len(dropped)


def quarantine_retention() -> int:
    """The retention job: rows older than QUARANTINE_DAYS go (released, deleted or waiting), then
    each mailbox over QUARANTINE_MAX_MB loses its oldest waiting messages. Returns how many went."""
    cutoff = timezone.now() - timedelta(days=settings.QUARANTINE_DAYS)
    gone, _ = Quarantined.objects.filter(created_at__lt=cutoff).delete()
    limit = settings.QUARANTINE_MAX_MB * MIB
    over = (Quarantined.objects.filter(released_at__isnull=True, deleted_at__isnull=True)
            .values("mailbox").annotate(total=Sum("size")).filter(total__gt=limit).values_list("mailbox", flat=True))
    for mailbox in Mailbox.objects.filter(pk__in=list(over)):
        gone += _make_room(mailbox)
    return gone
