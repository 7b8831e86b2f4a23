"""Celery tasks: thin, idempotent, they call services."""
from celery import shared_task
from django.conf import settings

from mailcore.sweep import JOBS, job_named, job_parts, job_pause, job_run


@shared_task(name="mailcore.tasks.sweep")
def sweep() -> None:
    """Beat's tick. Batch jobs each get a task of their own, so mail never waits behind a slow
    webhook endpoint and every worker slot can take a batch; the other jobs run here in turn."""
    for job in JOBS:
        if job.drains:
            _start_parts(job)
        else:
            job_run(job)


@shared_task(name="mailcore.tasks.run_job", acks_late=True)
def run_job(name: str, part: int = 0) -> None:
    """One run of a batch job's part; queued again at once while it handles work, and for the moment
    its next work falls due when that comes before beat's next tick. When another process holds the
    part it does nothing: that process carries on."""
    job, interval = job_named(name), settings.SWEEP_INTERVAL_SECONDS
    result = job_run(job, part)
    if result:
        _again(run_job, name, part)
    elif result is not None and (pause := job_pause(job, interval)) < interval:
        _again(run_job, name, part, countdown=pause)


@shared_task(name="mailcore.tasks.dispatch_due_mail", acks_late=True)
def dispatch_due_mail() -> int:
    """Send what is due now; enqueued right after a send commits so mail leaves at once, and again
    while it finds a batch to send."""
    from mailcore.sending.dispatch import outbound_dispatch_due

    handled = outbound_dispatch_due()
    if handled:
        _again(dispatch_due_mail)
    return handled


@shared_task(name="mailcore.tasks.deliver_webhooks", acks_late=True)
def deliver_webhooks() -> None:
    """New events committed: each part of the webhook job runs (see run_job). Through the job and
    its part locks, never beside them, so one endpoint's deliveries stay with one run, in order."""
    _start_parts(job_named("deliver-webhooks"))


def _start_parts(job) -> None:
    """A run_job task for each part of a batch job (one, for a job that does not run in parts)."""
    for part in range(job_parts(job)):
        run_job.delay(job.name, part)


def _again(task, *args, countdown: float | None = None) -> None:
    """Queue the task once more. Eager runs (no Redis) have no queue to come back through, and
    would recurse: there the embedded worker's loop does the same."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply_async(args, countdown=countdown)
