"""Enqueue background work by task name, so services never import the task module (which imports
them). With Redis, a Celery worker picks the job up at once; without it the in-process worker's
next sweep runs the same work within seconds, so there is nothing to send."""
from django.conf import settings

DISPATCH_DUE_MAIL = "mailcore.tasks.dispatch_due_mail"
DELIVER_WEBHOOKS = "mailcore.tasks.deliver_webhooks"


def enqueue(task_name: str) -> None:
    if settings.REDIS_URL:
        from celery import current_app

        current_app.send_task(task_name)
