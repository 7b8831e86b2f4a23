"""The embedded background worker (used when no Redis is configured): every sweep job runs in a
thread of its own, so one slow job (a webhook endpoint timing out) never delays another (mail).
A batch job that handled work runs again at once; one that found nothing sleeps until its next
work falls due, or its interval, or until a NOTIFY on PostgreSQL says new work was committed
(mailcore.jobs.enqueue).

With WORKER_PROCESSES above 1 (the default on PostgreSQL: the CPU count, up to 4) the batch jobs
that may run in parts (mail dispatch, webhooks) get a process per part: this process runs part 0
and every other job, and starts, watches and restarts `worker --part N` for the others, so a
dispatch batch's CPU work (MIME, DKIM) uses more than one core."""
import logging
import os
import signal
import subprocess
import sys
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connections

from mailcore.jobs import WAKE_CHANNEL
from mailcore.sweep import JOBS, Job, job_parts, job_pause, job_run, sweep_run

log = logging.getLogger(__name__)
PARENT_VARIABLE = "MAILWELL_WORKER_PARENT"  # the main worker's pid, for its parts


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
        parser.add_argument("--part", type=int, default=0,
                            help="Run only part N of the jobs that run in parts (started by the main worker).")

    def handle(self, *args, once=False, part=0, **options):
        if once:
            sweep_run()
            return
        jobs = JOBS if part == 0 else [job for job in JOBS if job.parts and part < job_parts(job)]
        stopping = threading.Event()
        woken = {job.name: threading.Event() for job in jobs}

        def stop(*_):
            stopping.set()
            for event in woken.values():
                event.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if part:
            threading.Thread(target=stop_with_parent, args=(stop, stopping), name="parent", daemon=True).start()

        def loop(job: Job) -> None:
            interval = min(job.every_seconds, settings.SWEEP_INTERVAL_SECONDS)
            while not stopping.is_set():
                woken[job.name].clear()  # a wake-up during the run below makes the next wait return at once
                close_old_connections()
                result = job_run(job, part)
                if job.drains and result:
                    continue  # the next batch is due now
                woken[job.name].wait(interval if result is None else job_pause(job, interval))
            connections.close_all()

        threads = [threading.Thread(target=loop, args=(job,), name=job.name, daemon=True) for job in jobs]
        if connections["default"].vendor == "postgresql":
            wakes = {job.woken_by: woken[job.name] for job in jobs if job.woken_by}
            threads.append(threading.Thread(target=listen_for_wakes, args=(wakes, stopping), name="listen",
                                            daemon=True))
        parts = max(job_parts(job) for job in JOBS)
        if part == 0 and parts > 1:
            threads.append(threading.Thread(target=run_parts, args=(parts, stopping), name="parts", daemon=True))
        for thread in threads:
            thread.start()
        if part == 0:
            self.stdout.write(f"worker: {len(JOBS)} jobs, checking every {settings.SWEEP_INTERVAL_SECONDS}s at most; "
                              f"mail and webhooks in {parts} process(es)")
        stopping.wait()
        for thread in threads:
            thread.join(timeout=15)


def stop_with_parent(stop, stopping: threading.Event) -> None:
    """A part whose main worker died (SIGKILL, OOM) finishes its batch and stops, not orphaned;
    also one started in the instant its main worker died (its parent is already someone else)."""
    parent = int(os.environ.get(PARENT_VARIABLE, os.getppid()))
    while True:
        if os.getppid() != parent:
            log.warning("worker: the main worker is gone; this part stops")
            stop()
        if stopping.wait(1):
            return


def run_parts(parts: int, stopping: threading.Event) -> None:
    """`worker --part N` for N in 1..parts-1, restarted when one exits; stopped with this one."""
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "worker"]
    children: dict[int, subprocess.Popen] = {}
    try:
        while not stopping.is_set():
            for number in range(1, parts):
                child = children.get(number)
                if child is not None and child.poll() is not None:
                    log.warning("worker: part %s exited with %s; starting it again", number, child.returncode)
                if child is None or child.poll() is not None:
                    children[number] = subprocess.Popen([*command, "--part", str(number)],
                                                        env={**os.environ, PARENT_VARIABLE: str(os.getpid())})
            stopping.wait(1)
    finally:
        for child in children.values():
            child.terminate()
        for child in children.values():
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
