"""Money as the design says: an integer amount in minor units (cents, kobo) and a currency. Never
a float or a Decimal in major units; those are only for display."""
from dataclasses import dataclass
from decimal import Decimal

CURRENCIES = {"usd": 100, "ngn": 100}  # minor units per major unit


@dataclass(frozen=True)
class Money:
    minor: int
    currency: str

    def __post_init__(self):
        if self.currency not in CURRENCIES:
            raise ValueError(f"unknown currency {self.currency!r}")
        if not isinstance(self.minor, int) or isinstance(self.minor, bool):
            raise TypeError("Money.minor is an integer number of minor units")

    @property
    def major(self) -> Decimal:
        """For display and for the spec's number fields (monthly_rate_usd)."""
        return Decimal(self.minor) / CURRENCIES[self.currency]

    def as_number(self) -> int | float:
        """The spec's JSON number in major units (12.5 for 1250 cents): the one conversion."""
        major = self.major
        return int(major) if major == major.to_integral_value() else float(major)

    def __str__(self) -> str:
        symbol = {"usd": "$", "ngn": "₦"}[self.currency]
        return f"{symbol}{self.major:,.2f}"
