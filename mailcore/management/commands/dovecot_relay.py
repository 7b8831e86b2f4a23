"""The relay for mail Dovecot sends itself (mailcore.outbound.dovecot_relay) on DOVECOT_RELAY_LISTEN
until SIGTERM or SIGINT."""
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.outbound.dovecot_relay import dovecot_relay_controller


class Command(BaseCommand):
    help = "Sign the mail Dovecot sends (vacation replies, Sieve redirects: its submission_host) and relay it."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default DOVECOT_RELAY_LISTEN")

    def handle(self, *args, listen=None, **options):
        listen = listen or settings.DOVECOT_RELAY_LISTEN
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        controller = dovecot_relay_controller(listen)
        controller.start()
        self.stdout.write(f"dovecot_relay: SMTP on {listen}, signing and relaying Dovecot's own mail")
        self.stdout.flush()
        try:
            while not stopping.wait(1):
                pass
        finally:
            controller.stop()
        self.stdout.write("dovecot_relay: stopped")
