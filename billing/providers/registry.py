"""Which provider takes which currency (`PAYMENT_PROVIDER`), as settings say."""
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from billing.providers.base import PaymentProvider

NAMES = ("local", "stripe", "paystack")


def providers_by_currency(value: str, *, production: bool) -> dict[str, str]:
    """`local`, `stripe`, `paystack` for every currency, or per currency: `usd=stripe,ngn=paystack`."""
    chosen = {"usd": "local", "ngn": "local"}
    value = (value or "local").strip()
    if "=" not in value:
        chosen = {currency: value for currency in chosen}
    else:
        for pair in value.split(","):
            currency, _, name = pair.strip().partition("=")
            if currency.strip().lower() not in chosen:
                raise ImproperlyConfigured(f"PAYMENT_PROVIDER: unknown currency {currency!r} (usd or ngn)")
            chosen[currency.strip().lower()] = name.strip()
    for currency, name in chosen.items():
        if name not in NAMES:
            raise ImproperlyConfigured(f"PAYMENT_PROVIDER: unknown provider {name!r} for {currency}")
        if name == "local" and production:
            raise ImproperlyConfigured("PAYMENT_PROVIDER: the local provider is refused when DJANGO_ENV=production")
    return chosen


def provider_named(name: str) -> PaymentProvider:
    if name == "local":
        from billing.providers.local import LocalProvider

        return LocalProvider()
    if name == "stripe":
        from billing.providers.stripe_provider import StripeProvider

        return StripeProvider()
    if name == "paystack":
        from billing.providers.paystack_provider import PaystackProvider

        return PaystackProvider()
    raise KeyError(name)


def provider_for(currency: str) -> PaymentProvider:
    return provider_named(settings.PAYMENT_PROVIDERS[currency])
