from django.apps import AppConfig

from mailcore.sweep import Job


class CampaignsConfig(AppConfig):
    """Drip campaigns over a contact group: steps, enrolments, suppressions, what became of each send."""

    name = "campaigns"
    verbose_name = "Campaigns"
    jobs = (Job("campaign-steps", "campaigns.engine:campaigns_run_due", 1, drains=True),)

    def ready(self) -> None:
        from campaigns.engine import steps_queue
        from campaigns.feedback import outcome_record
        from mailcore.monitoring import feature_queues
        from mailcore.outbound.feedback import outcome_listen

        outcome_listen(outcome_record)  # campaign deliveries hear what became of their mail
        feature_queues.register(steps_queue)
