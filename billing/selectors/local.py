"""The local provider's hosted checkout, as its own page (portal.checkout) reads it."""
from billing.models import LocalCheckout


def local_checkout_get(*, token: str) -> LocalCheckout:
    return LocalCheckout.objects.get(token=token)
