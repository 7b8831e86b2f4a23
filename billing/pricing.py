"""Wholesale prices partners pay per mailbox and month, in major units by currency."""
from decimal import Decimal

WHOLESALE_MONTHLY = {
    "pro": {"usd": Decimal("2.00"), "ngn": Decimal("3000")},
    "premium": {"usd": Decimal("5.00"), "ngn": Decimal("7500")},
}


def monthly_rate(plan_type: str, currency: str) -> Decimal:
    return WHOLESALE_MONTHLY[plan_type][currency]
