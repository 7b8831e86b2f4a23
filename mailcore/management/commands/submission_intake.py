"""The submission intake (mailcore.sending.intake) on SUBMISSION_INTAKE_LISTEN until SIGTERM or SIGINT."""
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.sending.intake import submission_controller


class Command(BaseCommand):
    help = "Take the mail mailbox owners submit on Postfix's port 587 (its smtpd_proxy_filter)."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default SUBMISSION_INTAKE_LISTEN")

    def handle(self, *args, listen=None, **options):
        listen = listen or settings.SUBMISSION_INTAKE_LISTEN
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        controller = submission_controller(listen)
        controller.start()
        self.stdout.write(f"submission_intake: SMTP on {listen} (store: {settings.MAIL_STORE})")
        self.stdout.flush()
        try:
            while not stopping.wait(1):
                pass
        finally:
            controller.stop()
        self.stdout.write("submission_intake: stopped")
