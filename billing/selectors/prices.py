"""Prices, read from the operator's price table (`billing.Price`, seeded with the launch figures)."""
from billing.models import Price
from billing.money import Money


class PriceMissing(LookupError):
    pass


def price(item: str, currency: str) -> Money:
    row = Price.objects.filter(item=item, currency=currency).values_list("amount_minor", flat=True).first()
    if row is None:
        raise PriceMissing(f"no {currency.upper()} price for {item}; an operator sets it in the console")
    return Money(row, currency)


def wholesale_monthly(plan_type: str, currency: str) -> Money:
    return price(f"wholesale:{plan_type}", currency)


def plan_prices(currency: str) -> dict[str, Money]:
    """The paid account plans' monthly prices, by plan code."""
    rows = Price.objects.filter(item__startswith="plan:", currency=currency)
    return {row.item.split(":", 1)[1]: Money(row.amount_minor, currency) for row in rows}
