"""Celery tasks: thin, idempotent, they call services."""
from celery import shared_task

from mailcore.sweep import sweep_run


@shared_task(name="mailcore.tasks.sweep")
def sweep() -> None:
    sweep_run()
