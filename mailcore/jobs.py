"""Enqueue background work by task name, so services never import the task module (which imports
them). With Redis, a Celery worker picks the job up at once. Without it, on PostgreSQL, a NOTIFY
wakes the in-process worker's job at once (`manage.py worker` LISTENs); on SQLite its next poll
runs the same work within seconds. Either way the work is rows in the database: a lost wake-up
costs time, never work."""
from django.conf import settings
from django.db import connection

DISPATCH_DUE_MAIL = "mailcore.tasks.dispatch_due_mail"
DELIVER_WEBHOOKS = "mailcore.tasks.deliver_webhooks"
WAKE_CHANNEL = "mailwell_jobs"


# Tasks whose rows NOTIFY by themselves on PostgreSQL (a trigger on their INSERT, migration 0021).
NOTIFIED_BY_TRIGGER = {DISPATCH_DUE_MAIL}


def enqueue(task_name: str) -> None:
    if settings.REDIS_URL:
        from celery import current_app

        current_app.send_task(task_name)
    elif connection.vendor == "postgresql" and task_name not in NOTIFIED_BY_TRIGGER:
        with connection.cursor() as cursor:  # delivered when the caller's transaction commits
            cursor.execute("SELECT pg_notify(%s, %s)", [WAKE_CHANNEL, task_name])
