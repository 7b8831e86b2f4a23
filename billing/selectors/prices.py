"""Wholesale prices: what a partner pays us per mailbox and month, by plan and currency."""
from billing.money import Money

WHOLESALE_MONTHLY_MINOR = {
    "pro": {"usd": 200, "ngn": 300_000},
    "premium": {"usd": 500, "ngn": 750_000},
}


def wholesale_monthly(plan_type: str, currency: str) -> Money:
    return Money(WHOLESALE_MONTHLY_MINOR[plan_type][currency], currency)
