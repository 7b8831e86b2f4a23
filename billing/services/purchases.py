"""Starting a purchase: one Purchase row and one provider checkout, or neither.

The checkout is created at the provider before the row is saved, inside one transaction: a provider
that is down (502) leaves nothing behind. What the purchase buys is applied later, once, by
`billing.services.events` from the provider's verified event.
"""
import secrets

from django.db import transaction

from billing.models import Purchase
from billing.providers.base import Buyer, CheckoutRequest
from billing.providers.registry import provider_for
from billing.money import Money
from billing.selectors.prices import price
from mailcore.accounts.models import Account


def new_reference() -> str:
    return f"mw_{secrets.token_hex(10)}"


def _buyer(account: Account) -> Buyer:
    user = account.users.order_by("id").first()
    return Buyer(account_id=account.pk, email=user.email if user else "", name=account.name)


def purchase_start(*, account: Account, kind: str, item: str, price_item: str, quantity: int, currency: str,
                   description: str, return_url: str, recurring: bool = False, months: int = 1,
                   payment_method: str = Purchase.Method.CARD, unit: Money | None = None,
                   partner_mailbox=None, wholesale_minor: int = 0) -> Purchase:
    """Open a checkout for `quantity` x `months` of a priced item (the price table's, or `unit` for
    a partner's retail price); returns the pending purchase."""
    unit = unit or price(price_item, currency)
    provider = provider_for(currency)
    reference = new_reference()
    request = CheckoutRequest(
        reference=reference, description=description, product=price_item,
        unit_amount_minor=unit.minor * months, quantity=quantity, currency=currency, recurring=recurring,
        return_url=return_url, buyer=_buyer(account), payment_method=payment_method,
        metadata={"reference": reference, "account_id": str(account.pk), "kind": kind, "item": item})
    with transaction.atomic():
        checkout = provider.checkout_create(request)
        return Purchase.objects.create(
            reference=reference, account=account, kind=kind, item=item, quantity=quantity, months=months,
            amount_minor=request.amount_minor, currency=currency, recurring=recurring,
            payment_method=payment_method, provider=provider.name, provider_ref=checkout.provider_ref,
            checkout_url=checkout.checkout_url, return_url=return_url, description=description,
            partner_mailbox=partner_mailbox, wholesale_minor=wholesale_minor)
