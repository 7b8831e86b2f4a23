"""`manage.py billing_clock advance --days N [--fail-renewals]`: move the local provider's clock.

Like Stripe's test clocks: renewals that fall due are charged (or failed, retried, and finally
canceled with --fail-renewals) and their signed events go through the same webhook intake as real
ones. `billing_clock show` prints the provider's time. Only for the local provider.
"""
from django.core.management.base import BaseCommand, CommandError

from billing.providers.local import clock_advance, clock_now


class Command(BaseCommand):
    help = "Move the local payment provider's clock forward, charging renewals that fall due."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        advance = sub.add_parser("advance", help="move forward and charge what falls due")
        advance.add_argument("--days", type=int, required=True)
        advance.add_argument("--fail-renewals", action="store_true", help="every renewal attempt fails")
        sub.add_parser("show", help="print the provider's time")

    def handle(self, *args, action, **options):
        if action == "show":
            self.stdout.write(f"local provider time: {clock_now():%Y-%m-%d %H:%M} UTC")
            return
        if not 1 <= options["days"] <= 3660:
            raise CommandError("--days is a whole number from 1 to 3660")
        done = clock_advance(days=options["days"], fail_renewals=options["fail_renewals"])
        self.stdout.write(f"local provider time: {clock_now():%Y-%m-%d %H:%M} UTC; renewed {done['renewed']}, "
                          f"failed {done['failed']}, canceled {done['canceled']}")
