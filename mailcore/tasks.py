"""Celery tasks: thin, idempotent, they call services."""
from celery import shared_task

from mailcore.sweep import sweep_run


@shared_task(name="mailcore.tasks.sweep")
def sweep() -> None:
    sweep_run()


@shared_task(name="mailcore.tasks.dispatch_due_mail", acks_late=True)
def dispatch_due_mail() -> int:
    """Send what is due now; enqueued right after a send commits so mail leaves at once."""
    from mailcore.sending.dispatch import outbound_dispatch_due

    return outbound_dispatch_due()


@shared_task(name="mailcore.tasks.deliver_webhooks", acks_late=True)
def deliver_webhooks() -> int:
    """Attempt due webhook deliveries; enqueued right after an event commits."""
    from mailcore.webhooks.delivery import webhooks_deliver_due

    return webhooks_deliver_due()
