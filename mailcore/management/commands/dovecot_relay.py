"""The relay for mail Dovecot sends itself (mailcore.outbound.dovecot_relay) on DOVECOT_RELAY_LISTEN
until SIGTERM or SIGINT."""
from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.management.serving import serve_until_stopped
from mailcore.outbound.dovecot_relay import dovecot_relay_controller


class Command(BaseCommand):
    help = "Sign the mail Dovecot sends (vacation replies, Sieve redirects: its submission_host) and relay it."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default DOVECOT_RELAY_LISTEN")

    def handle(self, *args, listen=None, **options):
        listen = listen or settings.DOVECOT_RELAY_LISTEN
        serve_until_stopped(self.stdout, dovecot_relay_controller(listen), name="dovecot_relay",
                            started=f"SMTP on {listen}, signing and relaying Dovecot's own mail")
