"""The thresholds a message's score is read against for one mailbox: its client domain's (set by
the partner, or the defaults), made stricter, never looser, by the owner's own Junk threshold."""
from dataclasses import dataclass

from mailcore.mailboxes.models import Mailbox
from protection.models import JUNK_AT, QUARANTINE_AT, REFUSE_AT, DomainPolicy, MailboxPolicy


@dataclass(frozen=True)
class Thresholds:
    """A score at or over a threshold takes its action: junk_at <= quarantine_at <= refuse_at."""

    junk_at: float = JUNK_AT
    quarantine_at: float = QUARANTINE_AT
    refuse_at: float = REFUSE_AT
    greylist: bool = True


def thresholds_for(mailbox: Mailbox) -> Thresholds:
    domain = DomainPolicy.objects.filter(domain_id=mailbox.domain_id).first() if mailbox.domain_id else None
    thresholds = Thresholds(domain.junk_at, domain.quarantine_at, domain.refuse_at, domain.greylist) \
        if domain else Thresholds()
    owner = MailboxPolicy.objects.filter(mailbox=mailbox).values_list("junk_at", flat=True).first()
    junk_at = min(thresholds.junk_at, owner) if owner is not None else thresholds.junk_at
    quarantine_at = max(thresholds.quarantine_at, junk_at)
    return Thresholds(junk_at, quarantine_at, max(thresholds.refuse_at, quarantine_at), thresholds.greylist)
