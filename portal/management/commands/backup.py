from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.ops.backups import BackupError, backup


class Command(BaseCommand):
    help = "Back up the database and Dovecot's mail directory (DOVECOT_MAIL_DIR) into DIR/<UTC time>/."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)

    def handle(self, *args, directory: Path, **options):
        mail_dir = Path(settings.DOVECOT_MAIL_DIR) if settings.DOVECOT_MAIL_DIR else None
        try:
            made = backup(database=settings.DATABASES["default"], mail_dir=mail_dir, to=directory)
        except BackupError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(str(made))
