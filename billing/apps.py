from django.apps import AppConfig

from mailcore.sweep import Job


class BillingConfig(AppConfig):
    """Money: prices, slot purchases, pay-as-you-go subscriptions, add-ons, payment providers."""

    name = "billing"
    jobs = (Job("payg-abandoned", "billing.services.payg:payg_abandoned_sweep", 60),)
