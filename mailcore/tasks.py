"""Celery tasks: thin, idempotent, they call services."""
from celery import shared_task

from mailcore.sweep import sweep_run


@shared_task(name="mailcore.tasks.sweep")
def sweep() -> None:
    sweep_run()


@shared_task(name="mailcore.tasks.dispatch_due_mail", acks_late=True)
def dispatch_due_mail() -> int:
    """Send what is due now; enqueued right after a send commits so mail leaves at once."""
    from mailcore.sending.services import outbound_dispatch_due

    return outbound_dispatch_due()
