"""The provider interface and the normalised, verified event every provider's webhook becomes."""
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from datetime import datetime
from typing import Protocol

from mailcore.errors import DomainError, ErrorCode


class ProviderUnavailable(DomainError):
    """The provider did not answer or answered with a server error: nothing was bought."""

    code = ErrorCode.UNAVAILABLE


class ProviderRefused(DomainError):
    """The provider refused the request (bad key, unsupported currency or channel)."""

    code = ErrorCode.UNAVAILABLE


class ProviderCannot(DomainError):
    """The provider has no way to do this (e.g. Paystack moving a subscription to another plan)."""

    code = ErrorCode.INVALID


class SignatureInvalid(Exception):
    """A webhook whose signature is missing, malformed, stale or wrong: answered 400, nothing changes."""


class EventKind:
    CHECKOUT_PAID = "checkout.paid"  # first payment taken; subscription_ref set for recurring ones
    CHECKOUT_FAILED = "checkout.failed"
    CHECKOUT_EXPIRED = "checkout.expired"
    RENEWAL_PAID = "subscription.renewed"
    RENEWAL_FAILED = "subscription.renewal_failed"  # the provider retries; not final
    SUBSCRIPTION_UPDATED = "subscription.updated"  # price changed (plan upgrade/downgrade)
    SUBSCRIPTION_CANCELED = "subscription.canceled"  # final: ended, or retries exhausted
    REFUNDED = "payment.refunded"
    IGNORED = "ignored"  # verified, but nothing billing acts on


@dataclass(frozen=True)
class Buyer:
    account_id: int
    email: str
    name: str


@dataclass(frozen=True)
class CheckoutRequest:
    reference: str  # our purchase reference, sent as metadata and returned in every event
    description: str  # what is bought, shown on the provider's page
    product: str  # the catalogue item (Price.Item), one provider product per item
    unit_amount_minor: int
    quantity: int
    currency: str
    recurring: bool  # a monthly subscription, else a one-off payment
    return_url: str
    buyer: Buyer
    payment_method: str = "card"  # or bank_transfer
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def amount_minor(self) -> int:
        return self.unit_amount_minor * self.quantity

    @property
    def return_url_with_reference(self) -> str:
        """The return URL with `reference=<ours>` added, so the page the buyer lands on can tell
        which purchase to wait for (every provider's hosted page sends the buyer there)."""
        parts = urlsplit(self.return_url)
        query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key != "reference"]
        query.append(("reference", self.reference))
        return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))


@dataclass(frozen=True)
class Checkout:
    provider_ref: str
    checkout_url: str


@dataclass(frozen=True)
class ProviderEvent:
    """One verified provider event, in our terms. `reference` is our purchase reference when the
    provider carries it (checkouts); renewals name the subscription by `subscription_ref`."""

    provider: str
    event_id: str
    kind: str
    reference: str = ""
    provider_ref: str = ""  # checkout session / transaction
    subscription_ref: str = ""
    payment_ref: str = ""  # charge / invoice / transaction that took money (receipt key)
    amount_minor: int | None = None
    currency: str = ""
    period_start: datetime | None = None
    period_end: datetime | None = None
    product: str = ""  # for subscription.updated: the item now subscribed
    unit_amount_minor: int | None = None
    cancel_at_period_end: bool | None = None
    payload: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CheckoutState:
    status: str  # open, paid, failed, expired
    subscription_ref: str = ""
    payment_ref: str = ""
    amount_minor: int | None = None
    currency: str = ""
    period_start: datetime | None = None
    period_end: datetime | None = None


@dataclass(frozen=True)
class SubscriptionState:
    """A subscription as its provider has it now (`billing_reconcile` compares it with ours)."""

    status: str
    period_start: datetime | None
    period_end: datetime | None
    product: str
    unit_amount_minor: int | None
    currency: str
    cancel_at_period_end: bool
    latest_invoice: str
    latest_invoice_paid: bool
    latest_invoice_reason: str
    latest_amount_paid: int | None


class PaymentProvider(Protocol):
    name: str

    def checkout_create(self, request: CheckoutRequest) -> Checkout: ...

    def checkout_state(self, provider_ref: str) -> CheckoutState: ...

    def checkout_expire(self, provider_ref: str) -> None:
        """Close an open checkout so it can no longer be paid (a deleted pending mailbox)."""
        ...

    def webhook_parse(self, body: bytes, headers) -> ProviderEvent:
        """Verify the signature on the raw body (SignatureInvalid if not) and normalise."""
        ...

    def subscription_cancel(self, subscription_ref: str, *, at_period_end: bool = True) -> None: ...

    def subscription_change(self, subscription_ref: str, *, product: str, unit_amount_minor: int,
                            description: str) -> None: ...

    def refund(self, payment_ref: str, *, amount_minor: int | None = None) -> None: ...
