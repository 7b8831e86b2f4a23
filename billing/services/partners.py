"""Hosting partners' money side: approving an application (which starts the trial and fixes the
billing currency), declining it, buying slot pools and add-ons, and checking a purchase."""
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from billing.models import Purchase
from billing.selectors.prices import price
from billing.services.events import purchase_sync
from billing.services.purchases import purchase_start
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.partners.models import HostingPartner

MAX_QUANTITY = 1000
MAX_MONTHS = 12
ADDON_KINDS = {"domain_slot": Purchase.Kind.DOMAIN_SLOT, "storage": Purchase.Kind.STORAGE}
ADDON_PRICE_ITEMS = {"domain_slot": "domain_slot", "storage": "storage_gb"}


class NotPending(DomainError):
    code = ErrorCode.CONFLICT


class PurchaseNotFound(DomainError):
    code = ErrorCode.NOT_FOUND


class MethodNotOffered(DomainError):
    code = ErrorCode.INVALID


def _tell(partner: HostingPartner, template: str, subject: str, **context) -> None:
    recipients = list(partner.account.users.values_list("email", flat=True))
    if recipients:
        body = render_to_string(f"emails/{template}.txt", {"partner": partner, "base_url": settings.PUBLIC_BASE_URL,
                                                           **context})
        send_mail(subject, body, None, recipients)


@transaction.atomic
def partner_approve(*, partner: HostingPartner, currency: str = "usd", trial_days: int | None = None,
                    note: str = "") -> HostingPartner:
    """Approve a pending application: the trial starts now, in the chosen billing currency."""
    partner = HostingPartner.objects.select_for_update().get(pk=partner.pk)
    if partner.status != HostingPartner.Status.PENDING:
        raise NotPending(f"the application is {partner.status}, not pending")
    if currency not in HostingPartner.Currency.values:
        raise InvalidFields({"currency": ["usd or ngn"]})
    now = timezone.now()
    days = settings.PARTNER_TRIAL_DAYS if trial_days is None else trial_days
    partner.status, partner.billing_currency = HostingPartner.Status.TRIAL, currency
    partner.trial_ends_at, partner.decided_at, partner.decision_note = now + timedelta(days=days), now, note
    partner.trial_notice_sent_at = None
    partner.save()
    transaction.on_commit(lambda: _tell(partner, "partner_approved",
                                        f"Your {settings.SITE_NAME} partner account is approved"))
    return partner


@transaction.atomic
def partner_reject(*, partner: HostingPartner, note: str = "") -> HostingPartner:
    partner = HostingPartner.objects.select_for_update().get(pk=partner.pk)
    if partner.status != HostingPartner.Status.PENDING:
        raise NotPending(f"the application is {partner.status}, not pending")
    partner.status, partner.decided_at, partner.decision_note = HostingPartner.Status.REJECTED, timezone.now(), note
    partner.save(update_fields=["status", "decided_at", "decision_note"])
    transaction.on_commit(lambda: _tell(partner, "partner_rejected", f"Your {settings.SITE_NAME} partner application"))
    return partner


def _quantity(value: int, field: str, maximum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= maximum:
        raise InvalidFields({field: [f"a whole number from 1 to {maximum}"]})
    return value


def pool_purchase_start(*, partner: HostingPartner, plan_type: str, quantity: int, return_url: str,
                        months: int = 1, payment_method: str = Purchase.Method.CARD) -> Purchase:
    """Checkout for `quantity` slots of a plan, each funding one mailbox for `months` months."""
    if plan_type not in ("pro", "premium"):
        raise InvalidFields({"plan_type": ["pro or premium"]})
    _quantity(quantity, "quantity", MAX_QUANTITY)
    _quantity(months, "months", MAX_MONTHS)
    _method_check(partner, payment_method)
    term = "1 month" if months == 1 else f"{months} months"
    return purchase_start(
        account=partner.account, kind=Purchase.Kind.SLOT_POOL, item=plan_type, price_item=f"slot:{plan_type}",
        quantity=quantity, months=months, currency=partner.billing_currency, return_url=return_url,
        payment_method=payment_method,
        description=f"{quantity} {plan_type.title()} mailbox slot{'s' if quantity != 1 else ''}, {term} each")


def addon_purchase_start(*, partner: HostingPartner, addon_type: str, quantity: int, return_url: str,
                         payment_method: str = Purchase.Method.CARD) -> Purchase:
    if addon_type not in ADDON_KINDS:
        raise InvalidFields({"addon_type": ["domain_slot or storage"]})
    _quantity(quantity, "quantity", MAX_QUANTITY)
    _method_check(partner, payment_method)
    what = (f"{quantity} extra domain slot{'s' if quantity != 1 else ''}" if addon_type == "domain_slot"
            else f"{quantity} GB extra storage")
    return purchase_start(
        account=partner.account, kind=ADDON_KINDS[addon_type], item=addon_type,
        price_item=ADDON_PRICE_ITEMS[addon_type], quantity=quantity, currency=partner.billing_currency,
        return_url=return_url, payment_method=payment_method, description=what)


def _method_check(partner: HostingPartner, payment_method: str) -> None:
    if payment_method not in Purchase.Method.values:
        raise InvalidFields({"payment_method": ["card or bank_transfer"]})
    if payment_method == Purchase.Method.BANK_TRANSFER and partner.billing_currency != "ngn":
        raise MethodNotOffered("bank_transfer is offered to NGN accounts only; pay by card")


def purchase_status(*, partner: HostingPartner, reference: str) -> Purchase:
    """The partner's purchase by reference (404 for unknown or another account's), re-checked with
    the provider while it is still pending."""
    purchase = Purchase.objects.filter(account=partner.account, reference=reference).first()
    if purchase is None:
        raise PurchaseNotFound(f"no purchase with reference {reference!r}")
    if purchase.status == Purchase.Status.PENDING:
        purchase_sync(purchase)
        purchase.refresh_from_db()
    return purchase


def addon_pricing(*, partner: HostingPartner) -> dict:
    currency = partner.billing_currency
    return {"currency_code": currency, "domain_slot_unit_price": price("domain_slot", currency),
            "storage_gb_unit_price": price("storage_gb", currency), "domain_limit": partner.domain_limit,
            "domains_used": partner.account.domains.count(), "extra_storage_mb": partner.extra_storage_mb}
