"""Who gets mail sent to an address on a hosted domain: the answer the listener gives at RCPT.

An address resolves to a mailbox directly, through an alias, or through a "+tag" subaddress of
either; the plan says which forwarding rules are live and whether a copy stays in the mailbox.
Anything else is a typed rejection carrying its SMTP reply (RFC 5321 code, RFC 3463 status).
A bulk send's signed return path (bounces+<id>-<signature>@domain, mailcore.outbound.feedback)
resolves to that message: what arrives there is read as a report about it, never stored.
"""
from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from mailcore.domains.models import Domain
from mailcore.mailboxes.models import Alias, ForwardingRule, Mailbox
from mailcore.outbound.feedback import return_path_message
from mailcore.outbound.models import OutboundMessage

SUBADDRESS_DELIMITER = "+"


@dataclass(frozen=True)
class Rejection:
    code: int
    status: str
    text: str

    @property
    def reply(self) -> str:
        return f"{self.code} {self.status} {self.text}"

    @property
    def temporary(self) -> bool:
        return 400 <= self.code < 500


@dataclass(frozen=True)
class DeliveryPlan:
    mailbox: Mailbox
    forward_to: tuple[str, ...]  # targets of live rules (enabled and confirmed), in rule order
    keep_copy: bool  # store in the mailbox: no live rule, or at least one live rule keeps a copy


@dataclass(frozen=True)
class ReturnPathPlan:
    message: OutboundMessage  # the bulk send whose signed return path the address is


BAD_ADDRESS = Rejection(501, "5.1.3", "Bad recipient address syntax")
NOT_HOSTED = Rejection(550, "5.7.1", "Relaying denied: domain not hosted here")
UNKNOWN_USER = Rejection(550, "5.1.1", "No such user here")
MAILBOX_DISABLED = Rejection(550, "5.2.1", "Mailbox disabled, not accepting messages")


def normalise_address(address: str) -> str:
    return address.strip().strip("<>").strip().lower()


def _mailbox_for(address: str) -> Mailbox | None:
    """The mailbox with its account and plans (delivery reads the quota), directly or through an alias."""
    mailbox = Mailbox.objects.select_related("account__plan", "plan").filter(address__iexact=address).first()
    if mailbox is None:
        alias = Alias.objects.select_related("mailbox__account__plan", "mailbox__plan").filter(
            address__iexact=address).first()
        mailbox = alias.mailbox if alias else None
    return mailbox


def _hosted_mailbox(address: str, domain_name: str) -> Mailbox | None:
    """The mailbox at exactly this address on a verified domain, in one query: the common case."""
    live_rules = ForwardingRule.objects.filter(mailbox=OuterRef("pk"), enabled=True, confirmed_at__isnull=False)
    return (Mailbox.objects.select_related("account__plan", "plan")
            .filter(address__iexact=address, domain__name=domain_name, domain__status=Domain.Status.VERIFIED)
            .annotate(has_live_rules=Exists(live_rules)).first())


def resolve(address: str) -> DeliveryPlan | ReturnPathPlan | Rejection:
    address = normalise_address(address)
    local_part, at, domain_name = address.rpartition("@")
    if not at or not local_part or not domain_name:
        return BAD_ADDRESS
    mailbox = _hosted_mailbox(address, domain_name)
    if mailbox is not None and not return_path_message(address):
        return _plan(mailbox)
    if not Domain.objects.filter(name=domain_name, status=Domain.Status.VERIFIED).exists():
        return NOT_HOSTED
    if message := return_path_message(address):
        return ReturnPathPlan(message)
    mailbox = _mailbox_for(address)
    if mailbox is None and SUBADDRESS_DELIMITER in local_part:
        mailbox = _mailbox_for(f"{local_part.split(SUBADDRESS_DELIMITER, 1)[0]}@{domain_name}")
    return _plan(mailbox)


def _plan(mailbox: Mailbox | None) -> DeliveryPlan | Rejection:
    if mailbox is None or not mailbox.is_managed:
        return UNKNOWN_USER
    if not mailbox.is_active:
        return MAILBOX_DISABLED
    has_live_rules = getattr(mailbox, "has_live_rules", True)  # unknown unless _hosted_mailbox asked
    live = [rule for rule in ForwardingRule.objects.filter(mailbox=mailbox) if rule.is_live] if has_live_rules else []
    return DeliveryPlan(
        mailbox=mailbox,
        forward_to=tuple(rule.forward_to.lower() for rule in live),
        keep_copy=not live or any(rule.keep_copy for rule in live),
    )
