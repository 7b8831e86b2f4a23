"""The inbound listener (LMTP after LHLO, SMTP after EHLO) on LMTP_LISTEN until SIGTERM or SIGINT."""
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.inbound.server import MAX_MESSAGE_BYTES, inbound_controller


class Command(BaseCommand):
    help = "Accept mail for hosted domains over LMTP (from Postfix) or SMTP, on LMTP_LISTEN."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default LMTP_LISTEN")
        parser.add_argument("--max-message-mb", type=int, default=MAX_MESSAGE_BYTES // (1024 * 1024))

    def handle(self, *args, listen=None, max_message_mb=35, **options):
        listen = listen or settings.LMTP_LISTEN
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        controller = inbound_controller(listen, max_message_bytes=max_message_mb * 1024 * 1024)
        controller.start()
        self.stdout.write(f"mail_listener: LMTP and SMTP on {listen} (store: {settings.MAIL_STORE})")
        try:
            while not stopping.wait(1):
                pass
        finally:
            controller.stop()
        self.stdout.write("mail_listener: stopped")
