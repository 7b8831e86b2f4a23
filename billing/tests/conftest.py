import pytest

from testkit.stripe_server import stripe_server


@pytest.fixture
def fake_stripe(settings):
    """A Stripe on loopback (testkit/stripe_server.py) taking USD; NGN stays with the local provider."""
    with stripe_server() as server:
        settings.PAYMENT_PROVIDERS = {"usd": "stripe", "ngn": "local"}
        settings.STRIPE_API_KEY = server.api_key
        settings.STRIPE_WEBHOOK_SECRET = server.webhook_secret
        settings.STRIPE_API_BASE = server.url
        yield server


@pytest.fixture
def fake_paystack(settings):
    """A Paystack on loopback (testkit/paystack_server.py) taking NGN; USD stays where it was."""
    from testkit.paystack_server import paystack_server

    with paystack_server() as server:
        settings.PAYMENT_PROVIDERS = {**settings.PAYMENT_PROVIDERS, "ngn": "paystack"}
        settings.PAYSTACK_SECRET_KEY = server.secret_key
        settings.PAYSTACK_API_BASE = server.url
        yield server
