"""The owner's filters and vacation reply applied at delivery where no Pigeonhole runs them: the
embedded store (`make run` without Dovecot). Same rows, same meaning as the script
mailcore.rules.sieve renders, and the same rules Pigeonhole's vacation follows (RFC 3834 and
RFC 5230): never answer the null sender, our own addresses, mailing lists, bulk or auto-submitted
mail, system addresses, or mail not addressed to the mailbox; each sender at most once in `days`.

Inbound calls this after the copy is stored; it sends the reply it is given through the outbound
relay (this layer cannot) and then calls `vacation_answered`.
"""
import hashlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, timedelta
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.policy import SMTP, compat32
from email.utils import format_datetime, formataddr, getaddresses, make_msgid

from django.conf import settings
from django.utils import timezone

from mailcore.domains.dkim import dkim_sign
from mailcore.outbound.aligned import address_domain, signing_domain
from mailcore.mailboxes.models import Mailbox
from mailcore.store.base import FolderNotFound, MessageNotFound, StoreError
from mailcore.store.factory import store_for
from mailcore.store.reading import message_ids, read
from mailcore.rules.filters import mail_filter_list, mailbox_addresses
from mailcore.rules.models import MailFilter, VacationAnswer, VacationReply
from mailcore.rules.sieve import FLAGGED, HEADERS, NOREPLY_PREFIXES, SEEN

log = logging.getLogger(__name__)

_header_parser = BytesHeaderParser(policy=compat32)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
LIST_HEADERS = ("list-id", "list-owner", "list-subscribe", "list-post", "list-unsubscribe", "list-help",
                "list-archive")
MY_ADDRESS_HEADERS = ("to", "cc", "bcc", "resent-to", "resent-cc", "resent-bcc")
SENDER_HEADERS = ("sender", "resent-from", "from")
SUBJECT_MAX_CHARS = 256


def filters_run_here(mailbox: Mailbox) -> bool:
    """Whether delivery must apply the rows itself: Dovecot (MAIL_STORE=imap) runs the Sieve script."""
    return mailbox.is_managed and settings.MAIL_STORE != "imap"


def _fold(text: str) -> str:
    """Sieve's default comparator, i;ascii-casemap: only ASCII letters are case-insensitive."""
    return text.translate(_ASCII_LOWER)


class _Headers:
    """A message's header fields as Sieve's tests see them: unfolded and MIME-decoded."""

    def __init__(self, raw: bytes):
        self._message = _header_parser.parsebytes(raw)

    def values(self, name: str) -> list[str]:
        found = []
        for value in self._message.get_all(name, []):
            text = str(value).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            text = re.sub(r"\r?\n(?=[ \t])", "", text)
            try:
                text = str(make_header(decode_header(text)))
            except (ValueError, LookupError, UnicodeError):
                pass
            found.append(text.strip())
        return found

    def addresses(self, name: str) -> list[tuple[str, str]]:
        return [(display, address) for display, address in getaddresses(self.values(name)) if address]


def _matches(mail_filter: MailFilter, headers: _Headers) -> bool:
    names = HEADERS[mail_filter.field]
    wanted = _fold(mail_filter.value)
    if mail_filter.field != MailFilter.Field.SUBJECT and mail_filter.match == MailFilter.Match.IS:
        return any(_fold(address) == wanted for name in names for _, address in headers.addresses(name))
    values = [_fold(value) for name in names for value in headers.values(name)]
    if mail_filter.match == MailFilter.Match.IS:
        return wanted in values
    return any(wanted in value for value in values)


@dataclass(frozen=True)
class Filing:
    """Where the filters put a message: folders with the flags it gets there, or the Inbox (`keep`)."""

    keep: bool
    flags: tuple[str, ...]  # for the Inbox copy when `keep`
    folders: tuple[tuple[str, tuple[str, ...]], ...] = ()


def filing_for(filters: list[MailFilter], raw: bytes) -> Filing:
    """Run the filters as Sieve does: flags gather in order; a move files a copy with the flags
    gathered so far and, like a delete, cancels the Inbox copy; `stop` ends the run."""
    headers = _Headers(raw)
    flags: list[str] = []
    folders: dict[str, tuple[str, ...]] = {}
    keep = True
    for mail_filter in filters:
        if not mail_filter.enabled or not _matches(mail_filter, headers):
            continue
        action = mail_filter.action
        if action == MailFilter.Action.MOVE:
            folders.setdefault(mail_filter.folder, tuple(flags))
            keep = False
        elif action == MailFilter.Action.DISCARD:
            keep = False
        else:
            flag = {MailFilter.Action.MARK_READ: SEEN, MailFilter.Action.STAR: FLAGGED}.get(action) \
                or mail_filter.label.keyword
            if flag not in flags:
                flags.append(flag)
        if mail_filter.stop:
            break
    return Filing(keep, tuple(flags) if keep else (), tuple(folders.items()))


def _flag_args(flags: tuple[str, ...]) -> dict:
    keywords = tuple(flag for flag in flags if not flag.startswith("\\"))
    return {"seen": True if SEEN in flags else None, "starred": True if FLAGGED in flags else None,
            "add_keywords": keywords}


def filters_apply(*, mailbox: Mailbox, uid: int, raw: bytes) -> Filing:
    """File the message just delivered to the Inbox (as `uid`). A folder that no longer exists
    keeps the message in the Inbox untouched, as Pigeonhole's failed fileinto does."""
    filing = filing_for(list(mail_filter_list(mailbox=mailbox)), raw)
    store = store_for(mailbox)
    try:
        if filing.keep:
            if filing.flags:
                store.set_flags("INBOX", uid, **_flag_args(filing.flags))
            return filing
        if not filing.folders:
            store.delete("INBOX", uid)
            return filing
        existing = {folder.name for folder in store.folders()}
        missing = [name for name, _ in filing.folders if name not in existing]
        if missing:
            log.warning("filter of %s names missing folder %s: kept in INBOX", mailbox.address, missing[0])
            return Filing(True, ())
        (first, first_flags), *others = filing.folders
        for folder, flags in others:
            store.append(folder, store.fetch("INBOX", uid).raw, flags=flags)
        store.set_flags("INBOX", uid, **_flag_args(first_flags))
        store.move("INBOX", uid, first)
    except (FolderNotFound, MessageNotFound, StoreError) as error:
        log.warning("filters of %s not applied: %s", mailbox.address, error)
        return Filing(True, ())
    return filing


# vacation


@dataclass(frozen=True)
class VacationOutgoing:
    """A reply to send: envelope recipient, the signed message, and what to remember once it left."""

    mailbox: Mailbox
    recipient: str
    raw: bytes
    handle: str


def vacation_handle(vacation: VacationReply) -> str:
    return hashlib.sha256(f"{vacation.subject}\0{vacation.body}".encode()).hexdigest()[:32]


def _in_dates(vacation: VacationReply, today) -> bool:
    return (vacation.starts_on is None or vacation.starts_on <= today) and \
        (vacation.ends_on is None or today <= vacation.ends_on)


def _system_address(address: str) -> bool:
    local_part = address.rpartition("@")[0].lower()
    return local_part in ("mailer-daemon", "listserv", "majordomo") or "-request" in local_part \
        or local_part.startswith("owner-") or noreply_address(address)


def noreply_address(address: str) -> bool:
    """noreply@, no-reply@, donotreply@, do-not-reply@ (and their +tags or suffixes): nobody reads
    an answer there, so a vacation reply would only feed a robot (or a spammer's list)."""
    local_part = address.rpartition("@")[0].lower()
    return local_part.startswith(NOREPLY_PREFIXES)


def _automatic(headers: _Headers) -> bool:
    """Mailing list, auto-submitted, bulk, or asking not to be answered (X-Auto-Response-Suppress)."""
    if any(headers.values(name) for name in LIST_HEADERS):
        return True
    if any(value.lower() != "no" for value in headers.values("auto-submitted")):
        return True
    if any(value.lower() in ("junk", "bulk", "list") for value in headers.values("precedence")):
        return True
    return any(flag.strip().lower() in ("all", "oof")
               for value in headers.values("x-auto-response-suppress") for flag in value.split(","))


def _reply_from(headers: _Headers, mine: list[str]) -> str | None:
    """The mailbox's address the message was sent to (To, Cc, Bcc, Resent-*), None if none."""
    for name in MY_ADDRESS_HEADERS:
        found = {address.lower() for _, address in headers.addresses(name)}
        for address in mine:
            if address in found:
                return address
    return None


def _reply_to(headers: _Headers, sender: str) -> str:
    """The sender with their name when a From/Sender header carries the same address."""
    for name in SENDER_HEADERS:
        for display, address in headers.addresses(name):
            if address.lower() == sender.lower():
                return formataddr((display, address))
    return sender


def vacation_reply_for(*, mailbox: Mailbox, raw: bytes, envelope_from: str) -> VacationOutgoing | None:
    """The reply this message gets, or None (off, out of dates, already answered, or one of the
    messages RFC 3834 says never to answer)."""
    vacation = VacationReply.objects.filter(mailbox=mailbox, enabled=True).first()
    now = timezone.now()
    sender = (envelope_from or "").strip().strip("<>")
    if vacation is None or not sender or not _in_dates(vacation, now.astimezone(UTC).date()):
        return None
    mine = mailbox_addresses(mailbox=mailbox)
    handle = vacation_handle(vacation)
    if sender.lower() in mine or _system_address(sender):
        return None
    if VacationAnswer.objects.filter(mailbox=mailbox, sender=sender.lower(), handle=handle,
                                     answered_at__gt=now - timedelta(days=vacation.days)).exists():
        return None
    headers = _Headers(raw)
    if any(noreply_address(address) for name in SENDER_HEADERS for _, address in headers.addresses(name)):
        return None
    reply_from = None if _automatic(headers) else _reply_from(headers, mine)
    if reply_from is None:
        return None
    original = read(raw)
    subject = vacation.subject or (f"Auto: {original.subject}" if original.subject else "Automated reply")
    # Signed by the domain it comes From (an alias may be on another of the account's domains), so
    # DMARC aligns; the mailbox's own domain if that one is not verified here.
    domain = signing_domain(address_domain(reply_from)) or mailbox.address.rpartition("@")[2]
    reply = EmailMessage(policy=SMTP)
    reply["Message-ID"] = make_msgid(domain=domain)
    reply["Date"] = format_datetime(now.astimezone(UTC))
    reply["From"] = reply_from
    reply["To"] = _reply_to(headers, sender)
    reply["Subject"] = " ".join(subject.split())[:SUBJECT_MAX_CHARS]
    [message_id] = message_ids(original.message_id)[:1] or [None]
    references = " ".join([*message_ids(original.references), *([message_id] if message_id else [])])
    if message_id:
        reply["In-Reply-To"] = message_id
    if references:
        reply["References"] = references
    reply["Auto-Submitted"] = "auto-replied (vacation)"
    reply["Precedence"] = "bulk"
    reply["X-Auto-Response-Suppress"] = "All"
    reply.set_content(vacation.body.replace("\r\n", "\n") + "\n", charset="utf-8")
    return VacationOutgoing(mailbox, sender, dkim_sign(reply.as_bytes(), domain_name=domain), handle)


def vacation_answered(*, outgoing: VacationOutgoing) -> None:
    """Remember the answer once the relay took it: that sender waits `days` for the next one."""
    VacationAnswer.objects.update_or_create(mailbox=outgoing.mailbox, sender=outgoing.recipient.lower(),
                                            handle=outgoing.handle, defaults={"answered_at": timezone.now()})
