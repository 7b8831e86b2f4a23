"""The moment an arriving message is judged before it is stored: the kernel asks the one screening
function a feature app registered (protection: rspamd, sender authentication, the owners' lists)
what to do for each recipient, and acts on the answer. With none registered everything is delivered.

The kernel's part is small and fixed: store the copy it is told to (with the headers it is given),
in the Inbox or in Junk; store nothing and answer for a message the screener kept itself (quarantine);
answer a refusal or a deferral at SMTP; run the owner's automations (vacation reply, forwarding,
filters) only for mail let into the Inbox.
"""
import re
from dataclasses import dataclass, field
from enum import StrEnum

from django.conf import settings

from mailcore.hooks import Hook
from mailcore.store.authresults import HEADER as AUTHENTICATION_RESULTS
from mailcore.store.authresults import parse as parse_authentication_results
from mailcore.store.base import VERDICT_HEADER  # noqa: F401 ("junk" on a copy for Junk; Dovecot's sieve_before files it there)
SCREENING_UNAVAILABLE = "451 4.7.1 Message could not be scanned, try again later"
JUNK_FOLDER = "Junk"


class Action(StrEnum):
    INBOX = "inbox"  # delivered; the owner's automations run
    JUNK = "junk"  # delivered to Junk; no automation runs
    HELD = "held"  # kept by the screener (quarantine): nothing stored, `reply` answered
    REFUSE = "refuse"  # `reply` is a 5xx
    DEFER = "defer"  # `reply` is a 4xx: greylisting, a scanner that cannot be reached


@dataclass(frozen=True)
class Arriving:
    """What the listener knows of a message besides its bytes: the connection's facts."""

    client_ip: str | None
    helo: str | None
    envelope_from: str  # "" for the null sender
    recipients: tuple[str, ...]
    authenticated_user: str | None = None  # a submission's logged-in user


@dataclass(frozen=True)
class Verdict:
    """What happens to one recipient's copy."""

    action: Action
    reply: str = ""  # the SMTP reply for HELD, REFUSE and DEFER
    headers: tuple[tuple[str, str], ...] = ()  # prepended to the stored copy (after the screened raw's own)
    automations: bool = True  # False: an Inbox copy the owner's forwards, vacation and filters skip (unscanned mail)


@dataclass(frozen=True)
class Screening:
    """The answer for one message: `raw` is what every copy starts from (forged headers of ours
    removed, our Authentication-Results added); each recipient's verdict by its address as given."""

    raw: bytes
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    def verdict(self, recipient: str) -> Verdict:
        return self.verdicts.get(recipient, INBOX)


INBOX = Verdict(Action.INBOX)

# Called as screening.answer(None, raw=..., arriving=Arriving, mailboxes={recipient: Mailbox});
# returns a Screening, or None to deliver as is. A screener that cannot judge answers DEFER itself;
# an exception here is answered 451 for every recipient (the sender retries, nothing is lost).
screening = Hook("inbound.screening")


# --- what only we may write on a message ---------------------------------------------------------

_OURS = re.compile(rb"^(x-mailwell-[^:]*|x-spam-[^:]*)$", re.IGNORECASE)


def header_end(raw: bytes) -> int:
    """Where the header block ends (the blank line), or the length of a message that has none."""
    return min((index for index in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if index >= 0), default=len(raw))


def remove_our_headers(raw: bytes) -> bytes:
    """The message without what only we may write: X-Mailwell-*, X-Spam-* and any
    Authentication-Results with our authserv-id (RFC 8601 section 5), every folded line of them.
    Other bytes stay as they were. The screener cleans what arrives with it; the kernel cleans
    what it stores unscreened (another owner's submission must not file itself in Junk or show
    sender checks of ours it never had)."""
    end = header_end(raw)
    fields: list[list[bytes]] = []
    for line in raw[:end].splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1].append(line)
        else:
            fields.append([line])
    kept = [field for field in fields if not _is_ours(b"".join(field))]
    if len(kept) == len(fields):
        return raw
    return b"".join(b"".join(field) for field in kept) + raw[end:]


def _is_ours(field: bytes) -> bool:
    name, colon, value = field.partition(b":")
    if not colon:
        return False
    name = name.strip()
    if _OURS.match(name):
        return True
    if name.lower() != AUTHENTICATION_RESULTS.lower().encode():
        return False
    unfolded = b" ".join(value.split())
    authserv = re.sub(rb"\([^)]*\)", b"", unfolded.partition(b";")[0]).strip().split(b" ")[0].strip(b'"')
    ours = settings.MAIL_HOST.lower()
    # Also as the reader sees it (mailcore.store.authresults: escaped and nested comments), so a header
    # this check misreads can never be read back as ours.
    return authserv.decode("utf-8", "replace").lower() == ours or (
        parse_authentication_results(value.decode("utf-8", "replace"))[0] == ours)
