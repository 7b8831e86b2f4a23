"""Billing's tables. Amounts are integer minor units plus a currency everywhere."""
from billing.models.events import ProviderEventRecord
from billing.models.partners import LedgerEntry, Payout, RetailPrice
from billing.models.local import LocalCheckout, LocalClock, LocalEvent, LocalSubscription
from billing.models.prices import Price
from billing.models.purchases import BillingCustomer, Payment, Purchase, Subscription

__all__ = ["BillingCustomer", "LedgerEntry", "LocalCheckout", "LocalClock", "LocalEvent", "LocalSubscription",
           "Payment", "Payout", "Price", "ProviderEventRecord", "Purchase", "RetailPrice", "Subscription"]
