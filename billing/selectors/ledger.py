"""Reads of a partner's ledger."""
from datetime import date, datetime

from django.db.models import Sum
from django.db.models.functions import TruncMonth
from django.utils import timezone

from billing.models import LedgerEntry
from mailcore.partners.models import HostingPartner


def month_starts(today: date, count: int) -> list[date]:
    """The first days of the last `count` months, oldest first, this month last."""
    index = today.year * 12 + today.month - 1
    return [date((index - back) // 12, (index - back) % 12 + 1, 1) for back in range(count - 1, -1, -1)]


def ledger_monthly_margins(*, partner: HostingPartner, starts: list[date]) -> dict[str, dict[date, int]]:
    """Net margins (refunds taken off) in minor units, per currency and month starting at `starts[0]`."""
    since = timezone.make_aware(datetime.combine(starts[0], datetime.min.time()))
    rows = (LedgerEntry.objects.filter(partner=partner, created_at__gte=since,
                                       kind__in=[LedgerEntry.Kind.MARGIN, LedgerEntry.Kind.REFUND])
            .annotate(month=TruncMonth("created_at")).values("month", "currency")
            .annotate(total=Sum("amount_minor")).order_by())
    totals: dict[str, dict[date, int]] = {}
    for row in rows:
        month = row["month"].date() if isinstance(row["month"], datetime) else row["month"]
        totals.setdefault(row["currency"], {})[month] = int(row["total"])
    return totals
