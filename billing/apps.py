from django.apps import AppConfig

from mailcore.sweep import Job


class BillingConfig(AppConfig):
    """Money: prices, slot purchases, pay-as-you-go subscriptions, add-ons, payment providers."""

    name = "billing"
    jobs = (
        Job("payg-abandoned", "billing.services.payg:payg_abandoned_sweep", 60),
        Job("deliver-local-events", "billing.services.local_events:local_events_deliver_due", 5, drains=True),
    )

    def ready(self):
        """The local provider's events reach the intake through billing's delivery function (the
        provider may not import the services above it)."""
        from billing.providers.local import local_event_recorded
        from billing.services.local_events import local_event_deliver

        local_event_recorded.register(local_event_deliver)
