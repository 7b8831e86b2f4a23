"""How a partner's client mailbox is paid for: the trial allowance, else a prepaid slot of its plan;
a renewal consumes a fresh slot term from the pool. Pay-as-you-go needs a retail price (none can be
set yet: the pay-as-you-go issue adds them)."""
from django.db import transaction

from billing.services.payg import NotPayAsYouGo, payg_mailbox_delete, payg_mailbox_open
from mailcore.domains.models import Domain
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.holders import mailbox_holder_forget
from mailcore.mailboxes.models import Mailbox
from mailcore.partners.mailboxes import (
    Funding,
    partner_mailbox_create,
    partner_mailbox_delete,
    partner_mailbox_fields_clean,
    partner_mailbox_renew,
    slot_funding,
    trial_funding,
)
from mailcore.partners.models import HostingPartner, MailboxSlot, PartnerMailbox
from mailcore.partners.services import slot_take


class NoSlotAvailable(DomainError):
    code = ErrorCode.PAYMENT_REQUIRED


def _prepaid(partner: HostingPartner, plan_id: str) -> Funding:
    funding = trial_funding(partner=partner) or slot_funding(partner=partner, plan_type=plan_id)
    if funding is None:
        raise NoSlotAvailable(f"no unused {plan_id} mailbox slot; buy a slot pool or use pay-as-you-go")
    return funding


def partner_mailbox_open(*, partner: HostingPartner, domain: Domain, local_part: str, password: str, plan_id: str,
                         display_name: str = "", funding_mode: str = "slot", return_url: str = "") -> PartnerMailbox:
    """Create a client mailbox funded as `funding_mode` says (the API's and the portal's one path)."""
    partner_mailbox_fields_clean(local_part, password, plan_id, display_name)
    if funding_mode == PartnerMailbox.Funding.PAY_AS_YOU_GO:
        if not return_url:
            raise InvalidFields({"return_url": ["required for a pay-as-you-go mailbox: where the checkout returns"]})
        return payg_mailbox_open(partner=partner, domain=domain, local_part=local_part, password=password,
                                 plan_id=plan_id, display_name=display_name, return_url=return_url)
    if funding_mode != PartnerMailbox.Funding.SLOT:
        raise InvalidFields({"funding_mode": ["slot or pay_as_you_go"]})
    return partner_mailbox_create(partner=partner, domain=domain, local_part=local_part, password=password,
                                  plan_id=plan_id, display_name=display_name, fund=lambda: _prepaid(partner, plan_id))


def partner_mailbox_renew_from_pool(*, partner_mailbox: PartnerMailbox) -> PartnerMailbox:
    """Renew a slot-funded (or trial) mailbox with one unused slot term of its plan: 402 without one.
    A pay-as-you-go mailbox renews through its subscription (400)."""
    if partner_mailbox.funding_mode == PartnerMailbox.Funding.PAY_AS_YOU_GO:
        raise NotPayAsYouGo("a pay-as-you-go mailbox renews through its subscription, not from the slot pool")
    partner = partner_mailbox.partner

    def take() -> MailboxSlot:
        slot = slot_take(partner=partner, plan_type=partner_mailbox.plan_type, fresh=True)
        if slot is None:
            raise NoSlotAvailable(f"no unused {partner_mailbox.plan_type} slot term left to renew with; "
                                  "buy a slot pool first")
        return slot

    return partner_mailbox_renew(partner_mailbox=partner_mailbox, fund=take)


def partner_mailbox_remove(*, partner_mailbox: PartnerMailbox) -> None:
    """DELETE as the spec's state table says, for either funding (the API's and the portal's one path).
    A mail account kept (deactivated) loses what its holder set up: the address may be created again
    for someone else."""
    mailbox_id = partner_mailbox.mailbox_id
    with transaction.atomic():
        if partner_mailbox.funding_mode == PartnerMailbox.Funding.PAY_AS_YOU_GO:
            payg_mailbox_delete(partner_mailbox=partner_mailbox)
        else:
            partner_mailbox_delete(partner_mailbox=partner_mailbox)
        kept = Mailbox.objects.filter(pk=mailbox_id).first()
        if kept is not None:
            mailbox_holder_forget(mailbox=kept)
