"""The thresholds a message's score is read against for one mailbox: its client domain's (set by
the partner, or the defaults), made stricter, never looser, by the owner's own Junk threshold."""
from dataclasses import dataclass

from functools import cache

from django.db import connection

from mailcore.mailboxes.models import Mailbox
from protection.models import JUNK_AT, QUARANTINE_AT, REFUSE_AT, DomainPolicy, MailboxPolicy, SenderRule


@dataclass(frozen=True)
class Thresholds:
    """A score at or over a threshold takes its action: junk_at <= quarantine_at <= refuse_at."""

    junk_at: float = JUNK_AT
    quarantine_at: float = QUARANTINE_AT
    refuse_at: float = REFUSE_AT
    greylist: bool = True
    sender_rules: bool = True  # whether the owner or the partner listed any sender (False: no need to look)


@cache
def _thresholds_sql() -> str:
    """The thresholds' one query, written once: the ORM took longer to build it (an EXISTS and two
    outer joins) than the database took to answer, for every recipient of every arriving message
    (bench/scanning.py). Table and column names come from the models."""
    mailbox, domain_policy = Mailbox._meta.db_table, DomainPolicy._meta.db_table
    mailbox_policy, rules = MailboxPolicy._meta.db_table, SenderRule._meta.db_table
    return (f"SELECT d.id, d.junk_at, d.quarantine_at, d.refuse_at, d.greylist, o.junk_at, "
            f"EXISTS (SELECT 1 FROM {rules} r WHERE r.mailbox_id = m.id OR r.domain_id = m.domain_id) "
            f"FROM {mailbox} m LEFT JOIN {domain_policy} d ON d.domain_id = m.domain_id "
            f"LEFT JOIN {mailbox_policy} o ON o.mailbox_id = m.id WHERE m.id = %s")


def thresholds_for(mailbox: Mailbox) -> Thresholds:
    """One query: the domain's policy and the owner's threshold joined to the mailbox's row (both
    optional), and whether any sender rule applies, so each recipient of an arriving message costs
    one round trip here (and none for the sender lists when nobody listed a sender)."""
    with connection.cursor() as cursor:
        cursor.execute(_thresholds_sql(), [mailbox.pk])
        row = cursor.fetchone()
    policy, junk, quarantine, refuse, greylist, owner, listed = row or (None,) * 6 + (True,)
    thresholds = Thresholds(junk, quarantine, refuse, bool(greylist)) \
        if policy is not None and mailbox.domain_id else Thresholds()
    junk_at = min(thresholds.junk_at, owner) if owner is not None else thresholds.junk_at
    quarantine_at = max(thresholds.quarantine_at, junk_at)
    return Thresholds(junk_at, quarantine_at, max(thresholds.refuse_at, quarantine_at), thresholds.greylist,
                      sender_rules=bool(listed))
