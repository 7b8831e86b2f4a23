"""The periodic sweep: every piece of scheduled work is rows with a due time plus a job here.

The embedded worker (`manage.py worker`) runs each job in a thread of its own every
SWEEP_INTERVAL_SECONDS at most, so a slow webhook endpoint never holds up outgoing mail; in
production Celery beat triggers the `mailcore.tasks.sweep` task. A cache lock lets only one
process run a given job per interval; the jobs themselves must be safe to run concurrently.
"""
import logging
from dataclasses import dataclass
from importlib import import_module

from django.core.cache import cache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    name: str
    path: str  # "module:function"
    every_seconds: int


JOBS = [
    Job("dispatch-due-mail", "mailcore.sending.dispatch:outbound_dispatch_due", 1),
    Job("deliver-webhooks", "mailcore.webhooks.delivery:webhooks_deliver_due", 1),
    Job("campaign-steps", "mailcore.campaigns.engine:campaigns_run_due", 1),
    Job("recheck-pending-domains", "mailcore.domains.services:domains_recheck_due", 30),
    Job("recheck-webmail-hostnames", "mailcore.webmail.hostnames:webmail_hostnames_recheck_due", 30),
    Job("partner-terms", "mailcore.partners.lifecycle:partner_terms_sweep", 60),
    Job("purge-old-vacation-answers", "mailcore.webmail.filters:vacation_answers_purge", 3600),
    Job("purge-expired-session-tokens", "mailcore.apikeys.sessions:session_tokens_purge_expired", 3600),
]


def job_run(job: Job):
    """Run one job if no other process ran it in its interval; returns what it returned (or None)."""
    if not cache.add(f"sweep-lock:{job.name}", 1, job.every_seconds):
        return None
    module, _, function = job.path.partition(":")
    try:
        return getattr(import_module(module), function)()
    except Exception:
        log.exception("sweep job %s failed", job.name)
        cache.delete(f"sweep-lock:{job.name}")  # try again on the next sweep
        return None


def sweep_run() -> dict[str, object]:
    """Run each job that is due, one after the other (Celery beat's task)."""
    return {job.name: job_run(job) for job in JOBS}
