"""The inbound listener (LMTP after LHLO, SMTP after EHLO) on LMTP_LISTEN until SIGTERM or SIGINT."""
import os
import signal
import sys
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.inbound.processes import ListenerProcesses
from mailcore.inbound.server import MAX_MESSAGE_BYTES, inbound_controller

# One process per core this process may use, up to 4: each keeps 8 delivery threads with a database
# connection apiece.
DEFAULT_PROCESSES = min(os.process_cpu_count() or 1, 4)


class Command(BaseCommand):
    help = "Accept mail for hosted domains over LMTP (from Postfix) or SMTP, on LMTP_LISTEN."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default LMTP_LISTEN")
        parser.add_argument("--max-message-mb", type=int, default=MAX_MESSAGE_BYTES // (1024 * 1024))
        parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES,
                            help=f"listener processes sharing the port (default: one per core, at most 4: "
                                 f"{DEFAULT_PROCESSES} here)")

    def handle(self, *args, listen=None, max_message_mb=35, processes=DEFAULT_PROCESSES, **options):
        listen = listen or settings.LMTP_LISTEN
        max_message_bytes = max_message_mb * 1024 * 1024
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        described = f"mail_listener: LMTP and SMTP on {listen} (store: {settings.MAIL_STORE}"
        if processes <= 1:
            self._serve_alone(listen, max_message_bytes, stopping, described + ")")
        elif not self._serve_in_processes(listen, max_message_bytes, processes, stopping,
                                          described + f", {processes} processes)"):
            self.stderr.write("mail_listener: a listener process ended; stopped")
            sys.exit(1)
        self.stdout.write("mail_listener: stopped")

    def _serve_alone(self, listen: str, max_message_bytes: int, stopping: threading.Event, described: str) -> None:
        controller = inbound_controller(listen, max_message_bytes=max_message_bytes)
        controller.start()
        self.stdout.write(described)
        try:
            while not stopping.wait(1):
                pass
        finally:
            controller.stop()

    def _serve_in_processes(self, listen: str, max_message_bytes: int, processes: int, stopping: threading.Event,
                            described: str) -> bool:
        """False when one of the processes ended on its own."""
        listener = ListenerProcesses(listen, processes=processes, max_message_bytes=max_message_bytes)
        listener.start()
        self.stdout.write(described)
        self.stdout.flush()
        try:
            return listener.serve(stopping)
        finally:
            listener.stop()
