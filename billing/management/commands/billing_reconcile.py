"""`manage.py billing_reconcile [--days 3]`: apply what a provider knows and we missed (a lost
webhook); see `billing.services.reconcile`. Run it hourly."""
from django.core.management.base import BaseCommand, CommandError

from billing.services.reconcile import billing_reconcile


class Command(BaseCommand):
    help = "Re-fetch pending purchases and live subscriptions from their providers and apply what was missed."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=3, help="pending purchases created in the last N days")

    def handle(self, *args, days: int, **options):
        if not 1 <= days <= 365:
            raise CommandError("--days is a whole number from 1 to 365")
        done = billing_reconcile(days=days)
        self.stdout.write(f"billing_reconcile: {done['purchases']} pending purchases checked, {done['settled']} "
                          f"settled; {done['subscriptions']} subscriptions checked, {done['applied']} changes "
                          f"applied; {done['errors']} provider errors")
