"""DMARC alerts (event domain.dmarc_alert): an outside source whose mail as the domain fails DMARC,
or one of our servers failing it. Once per domain, kind and source in each ALERT_PERIOD, however
many reports show it: the unique DmarcAlert row is the memory."""
from datetime import date, timedelta

from django.db import IntegrityError, transaction

from mailcore.events.services import emit
from trust.models import DmarcAlert, DmarcReport, DmarcSource

ALERT_PERIOD_DAYS = 7
EVENT = "domain.dmarc_alert"


def alert_period_start(day: date) -> date:
    """The start of the fixed 7-day period the day falls in (periods counted from 2000-01-03, a Monday)."""
    epoch = date(2000, 1, 3)
    return epoch + timedelta(days=(day - epoch).days // ALERT_PERIOD_DAYS * ALERT_PERIOD_DAYS)


def _kind(source: DmarcSource) -> str | None:
    if source.aligned or source.count == 0:
        return None
    return DmarcAlert.Kind.OUR_SERVER_FAILING if source.ours else DmarcAlert.Kind.UNKNOWN_SOURCE


def dmarc_alerts_raise(*, report: DmarcReport) -> list[DmarcAlert]:
    """Alerts for the report's failing sources not yet raised in their period (in the caller's transaction)."""
    period = alert_period_start(report.end_at.date())
    rows = list(report.sources.all())
    raised = []
    for source in rows:
        kind = _kind(source)
        if kind is None:
            continue
        try:
            with transaction.atomic():
                alert = DmarcAlert.objects.create(domain=report.domain, kind=kind, source_ip=source.source_ip,
                                                  period_start=period, report=report)
        except IntegrityError:  # already raised for this source in this period
            continue
        same_source = [row for row in rows if row.source_ip == source.source_ip]
        emit(account=report.domain.account, name=EVENT, data={
            "domain_id": report.domain_id, "domain": report.domain.name, "kind": kind,
            "source_ip": source.source_ip, "reverse_name": source.reverse_name or None,
            "messages": sum(row.count for row in same_source),
            "failed": sum(row.count for row in same_source if not row.aligned),
            "reporter": report.org_name, "report_id": report.report_id, "period_start": period.isoformat(),
        })
        raised.append(alert)
    return raised
