from django.apps import AppConfig


class BillingConfig(AppConfig):
    """Money: prices, slot purchases, pay-as-you-go subscriptions, add-ons, payment providers."""

    name = "billing"

    def ready(self):
        """Billing's periodic work joins the sweep (mailcore runs jobs by path, never importing billing)."""
        from mailcore.sweep import JOBS, Job

        if not any(job.name == "payg-abandoned" for job in JOBS):
            JOBS.append(Job("payg-abandoned", "billing.services.payg:payg_abandoned_sweep", 60))
