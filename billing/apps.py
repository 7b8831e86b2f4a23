from django.apps import AppConfig


class BillingConfig(AppConfig):
    """Money: prices, slot purchases, pay-as-you-go subscriptions, add-ons, payment providers."""

    name = "billing"
