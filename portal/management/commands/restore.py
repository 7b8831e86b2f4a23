from pathlib import Path

import dj_database_url

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.ops.backups import BackupError, restore


class Command(BaseCommand):
    help = ("Restore a backup made by `manage.py backup`: by default into this installation's database and "
            "DOVECOT_MAIL_DIR (stop the app first); --database-url and --mail-dir restore elsewhere, for a drill.")

    def add_arguments(self, parser):
        parser.add_argument("backup", type=Path, help="DIR/<UTC time>, as `manage.py backup` printed it")
        parser.add_argument("--database-url", default="")
        parser.add_argument("--mail-dir", type=Path, default=None)

    def handle(self, *args, backup: Path, database_url: str, mail_dir: Path | None, **options):
        database = dj_database_url.parse(database_url) if database_url else settings.DATABASES["default"]
        mail_dir = mail_dir or (Path(settings.DOVECOT_MAIL_DIR) if settings.DOVECOT_MAIL_DIR else None)
        try:
            restore(source=backup, database=database, mail_dir=mail_dir)
        except BackupError as error:
            raise CommandError(str(error)) from error
        self.stdout.write(f"restored {backup}")

