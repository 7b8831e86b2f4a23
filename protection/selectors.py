"""Reads of the quarantine, each scoped to who asks: a mailbox's owner, a hosting partner (across
its clients), the operator (everything)."""
from django.db.models import QuerySet

from mailcore.mailboxes.models import Mailbox
from mailcore.partners.models import HostingPartner
from protection.models import Quarantined

WAITING, RELEASED, DELETED, ALL = "waiting", "released", "deleted", "all"
STATES = (WAITING, RELEASED, DELETED, ALL)


def _in_state(rows: QuerySet[Quarantined], state: str) -> QuerySet[Quarantined]:
    if state == WAITING:
        return rows.filter(released_at__isnull=True, deleted_at__isnull=True)
    if state == RELEASED:
        return rows.filter(released_at__isnull=False)
    if state == DELETED:
        return rows.filter(deleted_at__isnull=False)
    return rows


def _listed(rows: QuerySet[Quarantined]) -> QuerySet[Quarantined]:
    """Newest first, without the raw bytes (a list never shows them)."""
    return rows.select_related("mailbox__domain__client").defer("raw").order_by("-created_at", "-pk")


def mailbox_quarantine(*, mailbox: Mailbox, state: str = WAITING) -> QuerySet[Quarantined]:
    return _listed(_in_state(Quarantined.objects.filter(mailbox=mailbox), state))


def mailbox_quarantined_get(*, mailbox: Mailbox, public_id: str) -> Quarantined:
    """Raises Quarantined.DoesNotExist for another mailbox's message."""
    return Quarantined.objects.select_related("mailbox__account").get(mailbox=mailbox, public_id=public_id)


def partner_quarantine(*, partner: HostingPartner, state: str = WAITING, client_id: int | None = None,
                       partner_mailbox_id: int | None = None) -> QuerySet[Quarantined]:
    """The partner's client mailboxes' quarantined messages; `client_id` and `partner_mailbox_id`
    (the /v1/hosting mailbox id) narrow it."""
    rows = Quarantined.objects.filter(mailbox__partner_mailbox__partner=partner)
    if client_id:
        rows = rows.filter(mailbox__domain__client_id=client_id)
    if partner_mailbox_id:
        rows = rows.filter(mailbox__partner_mailbox__pk=partner_mailbox_id)
    return _listed(_in_state(rows, state))


def partner_quarantined_get(*, partner: HostingPartner, public_id: str) -> Quarantined:
    """Raises Quarantined.DoesNotExist for a message of another partner's mailbox."""
    return Quarantined.objects.select_related("mailbox__account", "mailbox__domain__client").get(
        mailbox__partner_mailbox__partner=partner, public_id=public_id)
