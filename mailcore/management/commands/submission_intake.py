"""The submission intake (mailcore.sending.intake) on SUBMISSION_INTAKE_LISTEN until SIGTERM or SIGINT."""
from django.conf import settings
from django.core.management.base import BaseCommand

from mailcore.management.serving import serve_until_stopped
from mailcore.sending.intake import submission_controller


class Command(BaseCommand):
    help = "Take the mail mailbox owners submit on Postfix's port 587 (its smtpd_proxy_filter)."

    def add_arguments(self, parser):
        parser.add_argument("--listen", default=None, help="host:port, default SUBMISSION_INTAKE_LISTEN")

    def handle(self, *args, listen=None, **options):
        listen = listen or settings.SUBMISSION_INTAKE_LISTEN
        serve_until_stopped(self.stdout, submission_controller(listen), name="submission_intake",
                            started=f"SMTP on {listen} (store: {settings.MAIL_STORE})")
