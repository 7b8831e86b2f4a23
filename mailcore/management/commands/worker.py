"""The embedded background worker (used when no Redis is configured): every sweep job runs in a
thread of its own, so one slow job (a webhook endpoint timing out) never delays another (mail).
A batch job that handled work runs again at once; one that found nothing sleeps until its next
work falls due, or its interval."""
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connections

from mailcore.sweep import JOBS, Job, job_pause, job_run, sweep_run


class Command(BaseCommand):
    help = "Run background work in-process (embedded mode). With REDIS_URL use Celery instead."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Run every job once and exit.")

    def handle(self, *args, once=False, **options):
        if once:
            sweep_run()
            return
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())

        def loop(job: Job) -> None:
            interval = min(job.every_seconds, settings.SWEEP_INTERVAL_SECONDS)
            while not stopping.is_set():
                close_old_connections()
                result = job_run(job)
                if job.drains and result:
                    continue  # the next batch is due now
                stopping.wait(interval if result is None else job_pause(job, interval))
            connections.close_all()

        threads = [threading.Thread(target=loop, args=(job,), name=job.name, daemon=True) for job in JOBS]
        for thread in threads:
            thread.start()
        self.stdout.write(f"worker: {len(threads)} jobs, checking every {settings.SWEEP_INTERVAL_SECONDS}s at most")
        stopping.wait()
        for thread in threads:
            thread.join(timeout=15)
