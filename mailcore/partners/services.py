"""Writes for hosting partners: clients, settings, the slot pool."""
from datetime import timedelta

from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.accounts.models import Account
from mailcore.partners.models import HostingPartner, LapseAction, MailboxSlot, PartnerClient

_UNSET = object()


class ClientHasDomains(DomainError):
    code = ErrorCode.CONFLICT


def _lapse_action(value, field: str, *, allow_null: bool) -> str | None:
    if value is None and allow_null:
        return None
    if value not in LapseAction.values:
        raise InvalidFields({field: [f"must be one of {', '.join(LapseAction.values)}"]})
    return value


def client_create(*, partner: HostingPartner, name: str) -> PartnerClient:
    if not name.strip():
        raise InvalidFields({"name": ["name must not be blank"]})
    return PartnerClient.objects.create(partner=partner, name=name.strip())


def client_update(*, client: PartnerClient, name=_UNSET, lapse_action_override=_UNSET) -> PartnerClient:
    fields = []
    if name is not _UNSET:
        if not str(name).strip():
            raise InvalidFields({"name": ["name must not be blank"]})
        client.name = str(name).strip()
        fields.append("name")
    if lapse_action_override is not _UNSET:
        client.lapse_action_override = _lapse_action(lapse_action_override, "lapse_action_override", allow_null=True)
        fields.append("lapse_action_override")
    if fields:
        client.save(update_fields=fields)
    return client


def client_delete(*, client: PartnerClient) -> None:
    if client.domains.exists():
        raise ClientHasDomains(f"{client.name} still has domains; delete them first")
    client.delete()


def partner_settings_update(*, partner: HostingPartner, default_client_lapse_action: str) -> HostingPartner:
    partner.default_client_lapse_action = _lapse_action(default_client_lapse_action, "default_client_lapse_action",
                                                        allow_null=False)
    partner.save(update_fields=["default_client_lapse_action"])
    return partner


def slots_grant(*, partner: HostingPartner, count: int, term_days: int = 30,
                plan_type: str = "") -> list[MailboxSlot]:
    """Add prepaid slots to the pool (funding-neutral: billing grants them for a confirmed purchase)."""
    return MailboxSlot.objects.bulk_create(
        [MailboxSlot(partner=partner, term_days=term_days, plan_type=plan_type) for _ in range(count)])


def slot_take(*, partner: HostingPartner, plan_type: str = "", fresh: bool = False) -> MailboxSlot | None:
    """Assign an unused slot for the plan (a slot bought for it, or one for any plan), or None.
    A freed slot keeps the rest of its term; `fresh` takes only never-used ones (a renewal needs a
    whole term).

    Each candidate is taken with a conditional UPDATE, so concurrent creates never share a slot.
    """
    now = timezone.now()
    MailboxSlot.objects.filter(partner=partner, status=MailboxSlot.Status.UNUSED, expires_at__lte=now).update(
        status=MailboxSlot.Status.EXPIRED)
    candidates = MailboxSlot.objects.filter(partner=partner, status=MailboxSlot.Status.UNUSED)
    if plan_type:
        candidates = candidates.filter(plan_type__in=[plan_type, ""])
    if fresh:
        candidates = candidates.filter(expires_at__isnull=True)
    for slot in candidates.order_by("-plan_type", "purchased_at", "id")[:20]:
        expires_at = slot.expires_at or now + timedelta(days=slot.term_days)
        if MailboxSlot.objects.filter(pk=slot.pk, status=MailboxSlot.Status.UNUSED).update(
                status=MailboxSlot.Status.ASSIGNED, expires_at=expires_at):
            slot.status, slot.expires_at = MailboxSlot.Status.ASSIGNED, expires_at
            return slot
    return None


def hosting_partner_enable(*, account: Account, status: str = HostingPartner.Status.ACTIVE) -> HostingPartner:
    partner, _ = HostingPartner.objects.update_or_create(account=account, defaults={"status": status})
    return partner
