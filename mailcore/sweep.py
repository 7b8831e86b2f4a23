"""The periodic sweep: every piece of scheduled work is rows with a due time plus a job here.

The embedded worker (`manage.py worker`) runs each job in a thread of its own every
SWEEP_INTERVAL_SECONDS at most, so a slow webhook endpoint never holds up outgoing mail; in
production Celery beat triggers the `mailcore.tasks.sweep` task. A cache lock lets only one
process run a given job per interval; the jobs themselves must be safe to run concurrently.

A batch job (`drains`) handles up to a batch of due rows per run and returns how many: while it
handles work it runs again at once, and its lock lasts only as long as a run, so the next batch
never waits for an interval. Its `wake` function, when it has one, tells when its next row falls
due, so the worker sleeps until then rather than a whole interval; `woken_by` names the task whose
enqueue (a NOTIFY on PostgreSQL, see mailcore.jobs) wakes it at once.

A batch job may run in WORKER_PROCESSES parts side by side (embedded: worker processes; Celery:
tasks), each part with a lock of its own. `SIDE_BY_SIDE` parts all claim from one queue (claims
never give a row to two runs); `PARTITIONED` parts each take their share (webhooks: by endpoint,
so one endpoint's deliveries still go one at a time, in order).
"""
import logging
from dataclasses import dataclass
from importlib import import_module

from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone


log = logging.getLogger(__name__)

# A run that handled work, then found the next one due at once or already past: not a busy loop.
MIN_PAUSE_SECONDS = 0.05


@dataclass(frozen=True)
class Job:
    name: str
    path: str  # "module:function"
    every_seconds: int
    drains: bool = False
    wake: str = ""  # "module:function" returning when its next work falls due (or None)
    woken_by: str = ""  # the task name mailcore.jobs.enqueue sends when new work for it is committed
    parts: str = ""  # SIDE_BY_SIDE or PARTITIONED: runs in WORKER_PROCESSES parts at once; "": one run at a time


SIDE_BY_SIDE = "side-by-side"
PARTITIONED = "partitioned"  # the function takes part=(index, count) and handles only its share


class DeclaredJobs:
    """Every installed app's jobs, as its AppConfig declares them in `jobs` (the kernel's in
    mailcore.apps), read when iterated: an app brings its own work, nothing appends to a global list."""

    def __iter__(self):
        for config in apps.get_app_configs():
            yield from getattr(config, "jobs", ())

    def __len__(self) -> int:
        return sum(1 for _ in self)


JOBS = DeclaredJobs()


def job_named(name: str) -> Job:
    return next(job for job in JOBS if job.name == name)


def _function(path: str):
    module, _, function = path.partition(":")
    return getattr(import_module(module), function)


def job_parts(job: Job) -> int:
    """How many runs of the job may go side by side."""
    return max(1, settings.WORKER_PROCESSES) if job.parts else 1


def job_run(job: Job, part: int = 0):
    """Run one job (its part `part`) if no other process ran it in its interval (a batch job: if
    none is running it); returns what it returned, or None when it did not run or failed."""
    count = job_parts(job)
    if part >= count:
        return None  # WORKER_PROCESSES shrank since this part was queued
    lock = f"sweep-lock:{job.name}" + (f":{part}" if count > 1 else "")
    if not cache.add(lock, 1, job.every_seconds):
        return None
    try:
        function = _function(job.path)
        result = function(part=(part, count)) if job.parts == PARTITIONED else function()
    except Exception:
        log.exception("sweep job %s failed", job.name)
        cache.delete(lock)  # try again on the next sweep
        return None
    if job.drains:
        cache.delete(lock)  # the next batch may start at once, here or in another process
    return result


def job_pause(job: Job, interval: float) -> float:
    """Seconds to wait after a run that found nothing: the interval, or less when the job's next
    work falls due sooner (a send scheduled for 09:00:00.2 leaves then, not up to an interval late)."""
    if not job.wake:
        return interval
    try:
        due = _function(job.wake)()
    except Exception:
        log.exception("sweep job %s: could not tell when its next work is due", job.name)
        return interval
    if due is None:
        return interval
    return min(interval, max(MIN_PAUSE_SECONDS, (due - timezone.now()).total_seconds()))


def sweep_run() -> dict[str, object]:
    """Run each job that is due, one after the other (`manage.py worker --once`)."""
    return {job.name: job_run(job) for job in JOBS}
