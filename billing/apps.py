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
        """The local provider hands its events to the intake through billing's delivery function (it
        may not import the services above it)."""
        from billing.providers import local
        from billing.services.local_events import local_event_deliver

        local.deliver_with(local_event_deliver)
