"""The embedded background worker: runs the sweep in a loop (used when no Redis is configured)."""
import signal
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from mailcore.sweep import sweep_run


class Command(BaseCommand):
    help = "Run background work in-process (embedded mode). With REDIS_URL use Celery instead."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Run one sweep and exit.")

    def handle(self, *args, once=False, **options):
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(f"worker: sweeping every {settings.SWEEP_INTERVAL_SECONDS}s")
        while not stopping:
            close_old_connections()
            sweep_run()
            if once:
                break
            time.sleep(settings.SWEEP_INTERVAL_SECONDS)
