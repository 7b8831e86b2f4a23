"""The embedded background worker (used when no Redis is configured): every sweep job runs in a
thread of its own, so one slow job (a webhook endpoint timing out) never delays another (mail).
A batch job that handled work runs again at once; one that found nothing sleeps until its next
work falls due, or its interval, or until a NOTIFY on PostgreSQL says new work was committed
(mailcore.jobs.enqueue)."""
import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connections

from mailcore.jobs import WAKE_CHANNEL
from mailcore.sweep import JOBS, Job, job_pause, job_run, sweep_run

log = logging.getLogger(__name__)


def listen_for_wakes(wakes: dict[str, threading.Event], stopping: threading.Event) -> None:
    """LISTEN on a connection of its own and set the job's event for each task name notified;
    reconnects after an error (meanwhile the jobs still poll at their interval)."""
    database = connections["default"]
    while not stopping.is_set():
        try:
            listener = database.get_new_connection(database.get_connection_params())
            listener.autocommit = True
            with listener:
                listener.execute(f"LISTEN {WAKE_CHANNEL}")
                while not stopping.is_set():
                    for notice in listener.notifies(timeout=1.0):
                        if woken := wakes.get(notice.payload):
                            woken.set()
        except Exception:  # noqa: BLE001 - logged; the jobs go on polling
            log.warning("worker: listening for new work failed; retrying", exc_info=True)
            stopping.wait(5)


class Command(BaseCommand):
    help = "Run background work in-process (embedded mode). With REDIS_URL use Celery instead."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Run every job once and exit.")

    def handle(self, *args, once=False, **options):
        if once:
            sweep_run()
            return
        stopping = threading.Event()
        woken = {job.name: threading.Event() for job in JOBS}

        def stop(*_):
            stopping.set()
            for event in woken.values():
                event.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

        def loop(job: Job) -> None:
            interval = min(job.every_seconds, settings.SWEEP_INTERVAL_SECONDS)
            while not stopping.is_set():
                woken[job.name].clear()  # a wake-up during the run below makes the next wait return at once
                close_old_connections()
                result = job_run(job)
                if job.drains and result:
                    continue  # the next batch is due now
                woken[job.name].wait(interval if result is None else job_pause(job, interval))
            connections.close_all()

        threads = [threading.Thread(target=loop, args=(job,), name=job.name, daemon=True) for job in JOBS]
        if connections["default"].vendor == "postgresql":
            wakes = {job.woken_by: woken[job.name] for job in JOBS if job.woken_by}
            threads.append(threading.Thread(target=listen_for_wakes, args=(wakes, stopping), name="listen",
                                            daemon=True))
        for thread in threads:
            thread.start()
        self.stdout.write(f"worker: {len(JOBS)} jobs, checking every {settings.SWEEP_INTERVAL_SECONDS}s at most")
        stopping.wait()
        for thread in threads:
            thread.join(timeout=15)
