"""A partner's ledger: margins on confirmed pay-as-you-go payments, refund debits, and payouts.

Every entry is integer minor units in one currency. A payment credits its margin once (a unique
(payment, kind) row), so a replayed event cannot pay a partner twice. The available balance is the
sum of entries; a payout request reserves its amount by a negative entry, a rejection releases it.
"""
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from billing.models import LedgerEntry, Payment, Payout
from billing.money import CURRENCIES, Money
from mailcore.errors import DomainError, ErrorCode, InvalidFields
from mailcore.partners.models import HostingPartner

PAYOUT_MINIMUM_MINOR = {"usd": 2_000, "ngn": 500_000}  # $20, ₦5,000


class PayoutNotRequested(DomainError):
    code = ErrorCode.CONFLICT


def margin_credit(*, partner: HostingPartner, payment: Payment, wholesale_minor: int) -> LedgerEntry | None:
    """Credit retail minus wholesale for a confirmed payment (once per payment)."""
    margin = payment.amount_minor - wholesale_minor
    if margin <= 0 or LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.MARGIN).exists():
        return None
    return LedgerEntry.objects.create(partner=partner, currency=payment.currency, amount_minor=margin,
                                      kind=LedgerEntry.Kind.MARGIN, payment=payment,
                                      description=f"Margin: {payment.description}")


def refund_debit(*, payment: Payment) -> LedgerEntry | None:
    """A refunded or disputed payment takes its margin back (once)."""
    credit = LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.MARGIN).first()
    if credit is None or LedgerEntry.objects.filter(payment=payment, kind=LedgerEntry.Kind.REFUND).exists():
        return None
    return LedgerEntry.objects.create(partner=credit.partner, currency=credit.currency,
                                      amount_minor=-credit.amount_minor, kind=LedgerEntry.Kind.REFUND,
                                      payment=payment, description=f"Refund: {payment.description}")


def balances(*, partner: HostingPartner) -> list[dict]:
    """Per currency: available, reserved by open payout requests, paid out in total."""
    result = []
    for currency in CURRENCIES:
        entries = LedgerEntry.objects.filter(partner=partner, currency=currency)
        payouts = Payout.objects.filter(partner=partner, currency=currency)
        if not entries.exists() and not payouts.exists():
            continue
        result.append({
            "currency": currency,
            "available": Money(entries.aggregate(total=Sum("amount_minor"))["total"] or 0, currency),
            "reserved": Money(payouts.filter(status=Payout.Status.REQUESTED).aggregate(
                total=Sum("amount_minor"))["total"] or 0, currency),
            "paid_out": Money(payouts.filter(status=Payout.Status.PAID).aggregate(
                total=Sum("amount_minor"))["total"] or 0, currency),
        })
    return result


@transaction.atomic
def payout_request(*, partner: HostingPartner, amount_minor: int, currency: str) -> Payout:
    if currency not in CURRENCIES:
        raise InvalidFields({"currency": ["usd or ngn"]})
    if currency != partner.billing_currency:
        raise InvalidFields({"currency": [f"your earnings are in your billing currency, "
                                          f"{partner.billing_currency.upper()}, and are paid out in it"]})
    HostingPartner.objects.select_for_update().get(pk=partner.pk)  # one request at a time per partner
    available = LedgerEntry.objects.filter(partner=partner, currency=currency).aggregate(
        total=Sum("amount_minor"))["total"] or 0
    minimum = PAYOUT_MINIMUM_MINOR[currency]
    if amount_minor < minimum:
        raise InvalidFields({"amount": [f"at least {Money(minimum, currency)}"]})
    if amount_minor > available:
        raise InvalidFields({"amount": [f"at most the available balance, {Money(max(available, 0), currency)}"]})
    payout = Payout.objects.create(partner=partner, currency=currency, amount_minor=amount_minor)
    LedgerEntry.objects.create(partner=partner, currency=currency, amount_minor=-amount_minor,
                               kind=LedgerEntry.Kind.PAYOUT, payout=payout, description="Payout requested")
    return payout


@transaction.atomic
def payout_decide(*, payout: Payout, paid: bool, note: str = "") -> Payout:
    """An operator marks a requested payout paid (the reservation stays spent) or rejected (released)."""
    payout = Payout.objects.select_for_update().get(pk=payout.pk)
    if payout.status != Payout.Status.REQUESTED:
        raise PayoutNotRequested(f"the payout is already {payout.status}")
    payout.status = Payout.Status.PAID if paid else Payout.Status.REJECTED
    payout.note, payout.decided_at = note, timezone.now()
    payout.save(update_fields=["status", "note", "decided_at"])
    if not paid:
        LedgerEntry.objects.create(partner=payout.partner, currency=payout.currency, amount_minor=payout.amount_minor,
                                   kind=LedgerEntry.Kind.PAYOUT_RELEASED, payout=payout,
                                   description="Payout rejected: amount released")
    return payout
