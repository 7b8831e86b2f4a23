"""The thresholds a message's score is read against for one mailbox: its client domain's (set by
the partner, or the defaults), made stricter, never looser, by the owner's own Junk threshold."""
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q

from mailcore.mailboxes.models import Mailbox
from protection.models import JUNK_AT, QUARANTINE_AT, REFUSE_AT, SenderRule


@dataclass(frozen=True)
class Thresholds:
    """A score at or over a threshold takes its action: junk_at <= quarantine_at <= refuse_at."""

    junk_at: float = JUNK_AT
    quarantine_at: float = QUARANTINE_AT
    refuse_at: float = REFUSE_AT
    greylist: bool = True
    sender_rules: bool = True  # whether the owner or the partner listed any sender (False: no need to look)


def thresholds_for(mailbox: Mailbox) -> Thresholds:
    """One query: the domain's policy and the owner's threshold joined to the mailbox's row (both
    optional), and whether any sender rule applies, so each recipient of an arriving message costs
    one round trip here (and none for the sender lists when nobody listed a sender)."""
    listed = SenderRule.objects.filter(Q(mailbox=OuterRef("pk")) | Q(domain=OuterRef("domain_id")))
    row = (Mailbox.objects.filter(pk=mailbox.pk).annotate(listed=Exists(listed))
           .values_list("domain__protection_policy__pk", "domain__protection_policy__junk_at",
                        "domain__protection_policy__quarantine_at", "domain__protection_policy__refuse_at",
                        "domain__protection_policy__greylist", "protection_policy__junk_at", "listed")
           .first())
    policy, junk, quarantine, refuse, greylist, owner, listed = row or (None,) * 6 + (True,)
    thresholds = Thresholds(junk, quarantine, refuse, greylist) \
        if policy is not None and mailbox.domain_id else Thresholds()
    junk_at = min(thresholds.junk_at, owner) if owner is not None else thresholds.junk_at
    quarantine_at = max(thresholds.quarantine_at, junk_at)
    return Thresholds(junk_at, quarantine_at, max(thresholds.refuse_at, quarantine_at), thresholds.greylist,
                      sender_rules=bool(listed))
