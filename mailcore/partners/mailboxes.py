"""A partner's client mailboxes: create with the funding billing decided, renew, delete.

Funding-neutral: how a mailbox is paid for (the trial allowance, a slot from the pool, later a
pay-as-you-go subscription) is billing's decision, handed in as a `fund` callable that runs inside
the creating transaction once the address is known to be free.
"""
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.accounts.models import Plan
from mailcore.partners.models import HostingPartner
from mailcore.domains.models import Domain
from mailcore.domains.report_addresses import is_report_local_part
from mailcore.events.services import emit
from mailcore.mailboxes.models import Mailbox
from mailcore.mailboxes.passwords import mailbox_password_hash
from mailcore.mailboxes.services import mailbox_create
from mailcore.partners.models import MailboxSlot, PartnerMailbox
from mailcore.partners.services import slot_take
from mailcore.store.base import StoreError
from mailcore.store.factory import store_for
from mailcore.timefmt import iso

PARTNER_PLANS = ("pro", "premium")
MIN_PASSWORD = 8
LOCAL_PART = re.compile(r"^[a-z0-9](?:[a-z0-9._+-]{0,62}[a-z0-9])?$")
RENEWAL = timedelta(days=30)


class DomainNotVerified(DomainError):
    code = ErrorCode.INVALID


class MailboxExists(DomainError):
    code = ErrorCode.CONFLICT


@dataclass(frozen=True)
class Funding:
    """How a new mailbox is paid for, as billing decided: its first status and term, and the slot."""

    status: str  # PartnerMailbox.Status.TRIAL, ACTIVE, or PENDING_PAYMENT (pay-as-you-go)
    expires_at: datetime
    slot: MailboxSlot | None = None
    enabled: bool = True  # False: the account exists but is locked out until payment
    funding_mode: str = PartnerMailbox.Funding.SLOT


def trial_funding(*, partner: HostingPartner) -> Funding | None:
    """A place in a trial partner's free allowance, or None."""
    if partner.status == HostingPartner.Status.TRIAL and partner.mailboxes.filter(
            status=PartnerMailbox.Status.TRIAL).count() < partner.trial_mailbox_allowance:
        return Funding(PartnerMailbox.Status.TRIAL, partner.trial_ends_at or timezone.now() + timedelta(days=14))
    return None


def slot_funding(*, partner: HostingPartner, plan_type: str = "") -> Funding | None:
    """An unused slot for the plan from the pool, taken (a conditional UPDATE), or None."""
    slot = slot_take(partner=partner, plan_type=plan_type)
    return Funding(PartnerMailbox.Status.ACTIVE, slot.expires_at, slot) if slot else None


def partner_mailbox_event_data(partner_mailbox: PartnerMailbox) -> dict:
    mailbox = partner_mailbox.mailbox
    return {"mailbox_id": partner_mailbox.pk, "email_address": mailbox.address, "domain": mailbox.domain.name,
            "client_id": mailbox.domain.client_id, "plan_type": partner_mailbox.plan_type,
            "status": partner_mailbox.status, "expires_at": iso(partner_mailbox.expires_at)}


def partner_mailbox_fields_clean(local_part: str, password: str, plan_id: str, display_name: str) -> str:
    """The new mailbox's fields (422 naming each bad one); returns the normalised local part."""
    errors = {}
    local_part = (local_part or "").strip().lower()
    if not LOCAL_PART.match(local_part) or ".." in local_part:
        errors["local_part"] = ["use letters, digits and . _ + - (not at the start or end), at most 64"]
    elif is_report_local_part(local_part):
        errors["local_part"] = [f"{local_part}@ receives the domain's DMARC and TLS reports"]
    if len(password or "") < MIN_PASSWORD:
        errors["password"] = [f"at least {MIN_PASSWORD} characters"]
    if plan_id not in PARTNER_PLANS:
        errors["plan_id"] = ["pro or premium"]
    if any(ord(char) < 32 or ord(char) == 127 for char in display_name):
        errors["display_name"] = ["no control characters"]
    if errors:
        raise InvalidFields(errors)
    return local_part


def partner_mailbox_create(*, partner: HostingPartner, domain: Domain, local_part: str, password: str,
                           plan_id: str, fund: Callable[[], Funding], display_name: str = "") -> PartnerMailbox:
    local_part = partner_mailbox_fields_clean(local_part, password, plan_id, display_name)
    if not domain.is_verified:
        raise DomainNotVerified(f"{domain.name} is not verified yet; finish its DNS set-up first")
    address = f"{local_part}@{domain.name}"
    plan = Plan.objects.get(code=plan_id)
    with transaction.atomic():
        existing = Mailbox.objects.filter(address=address, kind=Mailbox.Kind.MANAGED).select_related("domain").first()
        if existing is not None and (existing.is_active or hasattr(existing, "partner_mailbox")
                                     or existing.account_id != partner.account_id):
            raise MailboxExists(f"{address} already exists")
        funding = fund()
        if existing is not None:  # a mailbox deleted earlier: its account and mail come back
            existing.password_hash = mailbox_password_hash(password)
            existing.plan, existing.is_active, existing.display_name = plan, funding.enabled, display_name
            existing.save(update_fields=["password_hash", "plan", "is_active", "display_name"])
            mailbox = existing
        else:
            mailbox = mailbox_create(domain=domain, local_part=local_part, password=password,
                                     display_name=display_name, plan=plan)
            if not funding.enabled:
                Mailbox.objects.filter(pk=mailbox.pk).update(is_active=False)
                mailbox.is_active = False
        partner_mailbox = PartnerMailbox.objects.create(partner=partner, mailbox=mailbox, slot=funding.slot,
                                                        plan_type=plan_id, status=funding.status,
                                                        funding_mode=funding.funding_mode,
                                                        expires_at=funding.expires_at)
        emit(account=partner.account, name="partner_mailbox.created", data=partner_mailbox_event_data(partner_mailbox))
        emit(account=partner.account, name="mailbox.created", data={"email": address, "plan": plan_id})
    try:
        store_for(mailbox).ensure_folders()
    except StoreError:
        pass  # Dovecot creates the folders itself on first login; provisioning is the row above
    return partner_mailbox


def partner_mailbox_renew(*, partner_mailbox: PartnerMailbox,
                          fund: Callable[[], MailboxSlot] | None = None) -> PartnerMailbox:
    """Extend the term from its end (or from now once lapsed) and re-enable it. `fund` (billing's)
    takes the slot term that pays for it, inside the transaction; without it the term is a month."""
    with transaction.atomic():
        now = timezone.now()
        start = max(partner_mailbox.expires_at, now)
        term = RENEWAL
        if fund is not None:
            new_slot = fund()
            term = timedelta(days=new_slot.term_days)
            if partner_mailbox.slot_id:  # the old slot's term is used up
                MailboxSlot.objects.filter(pk=partner_mailbox.slot_id).update(status=MailboxSlot.Status.EXPIRED)
            partner_mailbox.slot = new_slot
        partner_mailbox.expires_at = start + term
        partner_mailbox.expiring_notice_sent_at = None
        if partner_mailbox.status in (PartnerMailbox.Status.EXPIRED, PartnerMailbox.Status.SUSPENDED,
                                      PartnerMailbox.Status.TRIAL):
            partner_mailbox.status = PartnerMailbox.Status.ACTIVE
        partner_mailbox.save()
        if partner_mailbox.slot_id:
            MailboxSlot.objects.filter(pk=partner_mailbox.slot_id).update(
                status=MailboxSlot.Status.ASSIGNED, expires_at=partner_mailbox.expires_at)
        mailbox = partner_mailbox.mailbox
        mailbox.is_active = True
        mailbox.plan = Plan.objects.get(code=partner_mailbox.plan_type)
        mailbox.save(update_fields=["is_active", "plan"])
        emit(account=partner_mailbox.partner.account, name="partner_mailbox.renewed",
             data=partner_mailbox_event_data(partner_mailbox))
    return partner_mailbox


def partner_mailbox_delete(*, partner_mailbox: PartnerMailbox) -> None:
    """The mailbox goes and its slot is freed (back in the pool for the rest of its paid term); the
    mail account is only deactivated and its mail kept. Its password goes too, which ends every
    session it opened (webmail, DAV, mail apps): whoever gets the address next starts with none."""
    with transaction.atomic():
        data = partner_mailbox_event_data(partner_mailbox)
        mailbox = partner_mailbox.mailbox
        if partner_mailbox.slot_id:
            MailboxSlot.objects.filter(pk=partner_mailbox.slot_id).update(status=MailboxSlot.Status.UNUSED)
        partner_mailbox.delete()
        mailbox.is_active, mailbox.password_hash = False, ""
        mailbox.save(update_fields=["is_active", "password_hash"])
        emit(account=mailbox.account, name="partner_mailbox.deleted", data={**data, "status": "deleted"})
        emit(account=mailbox.account, name="mailbox.deleted", data={"email": mailbox.address})


def partner_mailbox_set_state(*, partner_mailbox: PartnerMailbox, status: str, enabled: bool,
                              expires_at: datetime | None = None, plan_type: str | None = None) -> PartnerMailbox:
    """Set a mailbox's status, whether its account may be used, its term and plan, as billing
    decided from a confirmed payment event (funding-neutral: no money here)."""
    partner_mailbox.status = status
    fields = ["status"]
    if expires_at is not None:
        partner_mailbox.expires_at = expires_at
        fields.append("expires_at")
    if plan_type is not None:
        partner_mailbox.plan_type = plan_type
        fields.append("plan_type")
    partner_mailbox.save(update_fields=fields)
    mailbox = partner_mailbox.mailbox
    mailbox.is_active = enabled
    mailbox.plan = Plan.objects.get(code=partner_mailbox.plan_type)
    mailbox.save(update_fields=["is_active", "plan"])
    return partner_mailbox


def partner_mailbox_purge(*, partner_mailbox: PartnerMailbox) -> dict:
    """Delete a mailbox that was never paid for, with its mail account and mail (a pay-as-you-go
    mailbox still pending payment). Returns its event data as it was."""
    data = partner_mailbox_event_data(partner_mailbox)
    mailbox = partner_mailbox.mailbox
    with transaction.atomic():
        partner_mailbox.delete()
        mailbox.delete()
    return data
