"""Refunds an operator asks for in the console. The provider refunds the charge; our state changes
only when its refund event arrives (`billing.services.events`), like every other billing change."""
from billing.models import Payment, Purchase
from billing.providers.registry import provider_named
from mailcore.errors import DomainError, ErrorCode


class NothingToRefund(DomainError):
    code = ErrorCode.CONFLICT


def payment_refund(*, payment: Payment) -> None:
    """Ask the payment's provider to refund it in full."""
    if payment.refunded_at is not None:
        raise NothingToRefund(f"receipt {payment.receipt_number} is already refunded")
    provider_named(payment.provider).refund(payment.provider_ref)


def purchase_refund(*, purchase: Purchase) -> list[Payment]:
    """Ask for a refund of every payment of the purchase not refunded yet (a subscription's renewals too)."""
    payments = list(purchase.payments.filter(refunded_at__isnull=True).order_by("paid_at", "id"))
    if not payments:
        raise NothingToRefund(f"purchase {purchase.reference} has no payment left to refund")
    for payment in payments:
        payment_refund(payment=payment)
    return payments
