"""Reads: a domain's report figures over a window of days (what the dashboard, the API and the
monthly report show), and its reports. The domain comes from a partner-scoped selector first."""
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from mailcore.domains.models import Domain
from trust.models import DmarcAlert, DmarcReport, DmarcSource, MonthlyReportSetting, TlsReport

DEFAULT_DAYS = 30
MAX_DAYS = 366


def share(part: int, whole: int) -> float:
    """A percentage with one decimal (0.0 when there is nothing to share)."""
    return round(100 * part / whole, 1) if whole else 0.0


@dataclass
class SourceFigures:
    source_ip: str
    reverse_name: str
    ours: bool
    messages: int = 0
    aligned: int = 0  # DMARC passed: SPF or DKIM aligned
    spf_aligned: int = 0
    dkim_aligned: int = 0
    spf_pass: int = 0  # auth_results, aligned or not
    dkim_pass: int = 0
    dispositions: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.messages - self.aligned

    @property
    def aligned_percent(self) -> float:
        return share(self.aligned, self.messages)


@dataclass
class DayFigures:
    day: date
    messages: int = 0
    aligned: int = 0

    @property
    def failed(self) -> int:
        return self.messages - self.aligned


@dataclass
class TlsFigures:
    reports: int = 0
    successes: int = 0
    failures: int = 0
    failure_types: dict[str, int] = field(default_factory=dict)


@dataclass
class DmarcSummary:
    domain: Domain
    since: datetime
    until: datetime
    reports: int = 0
    messages: int = 0
    aligned: int = 0
    spf_aligned: int = 0
    dkim_aligned: int = 0
    spf_pass: int = 0
    dkim_pass: int = 0
    sources: list[SourceFigures] = field(default_factory=list)
    days: list[DayFigures] = field(default_factory=list)
    tls: TlsFigures = field(default_factory=TlsFigures)
    published_policy: str | None = None  # p= as the newest report saw it
    days_reported: int = 0  # days with at least one report
    days_reported_at: dict[str, int] = field(default_factory=dict)  # days with reports, by policy seen

    @property
    def failed(self) -> int:
        return self.messages - self.aligned

    @property
    def aligned_percent(self) -> float:
        return share(self.aligned, self.messages)

    @property
    def our_sources(self) -> list[SourceFigures]:
        return [source for source in self.sources if source.ours]

    @property
    def outside_sources(self) -> list[SourceFigures]:
        return [source for source in self.sources if not source.ours]

    @property
    def failing_our_sources(self) -> list[SourceFigures]:
        return [source for source in self.our_sources if source.failed]


def dmarc_summary(*, domain: Domain, days: int = DEFAULT_DAYS, until: datetime | None = None) -> DmarcSummary:
    """The figures of the reports that began in the last `days` days (to `until`, default now)."""
    until = until or timezone.now()
    since = until - timedelta(days=days)
    summary = DmarcSummary(domain=domain, since=since, until=until)
    reports = list(DmarcReport.objects.filter(domain=domain, begin_at__gte=since, begin_at__lt=until)
                   .order_by("begin_at", "id"))
    summary.reports = len(reports)
    summary.published_policy = reports[-1].policy if reports else None
    rows = DmarcSource.objects.filter(report__in=reports).order_by("id")
    by_source: dict[str, SourceFigures] = {}
    by_day = {since.date() + timedelta(days=n): DayFigures(since.date() + timedelta(days=n))
              for n in range((until.date() - since.date()).days + 1)}
    day_of = {report.pk: report.begin_at.date() for report in reports}
    policy_days: dict[str, set[date]] = defaultdict(set)
    for report in reports:
        policy_days[report.policy].add(report.begin_at.date())
    for row in rows:
        figures = by_source.setdefault(row.source_ip, SourceFigures(row.source_ip, row.reverse_name, row.ours))
        aligned = row.count if row.aligned else 0
        for target in (summary, figures):
            target.messages += row.count
            target.aligned += aligned
            target.spf_aligned += row.count if row.spf_aligned else 0
            target.dkim_aligned += row.count if row.dkim_aligned else 0
            target.spf_pass += row.count if row.spf_result == "pass" else 0
            target.dkim_pass += row.count if row.dkim_result == "pass" else 0
        figures.dispositions[row.disposition] = figures.dispositions.get(row.disposition, 0) + row.count
        day = by_day.setdefault(day_of[row.report_id], DayFigures(day_of[row.report_id]))
        day.messages += row.count
        day.aligned += aligned
    summary.sources = sorted(by_source.values(), key=lambda source: (-source.messages, source.source_ip))
    summary.days = [by_day[day] for day in sorted(by_day)]
    summary.days_reported = len({report.begin_at.date() for report in reports})
    summary.days_reported_at = {policy: len(days) for policy, days in policy_days.items()}
    summary.tls = _tls_figures(domain, since, until)
    return summary


def _tls_figures(domain: Domain, since: datetime, until: datetime) -> TlsFigures:
    figures = TlsFigures()
    for report in TlsReport.objects.filter(domain=domain, begin_at__gte=since, begin_at__lt=until):
        figures.reports += 1
        figures.successes += report.successes
        figures.failures += report.failures
        for detail in report.failure_details:
            kind = detail.get("result_type") or "unknown"
            figures.failure_types[kind] = figures.failure_types.get(kind, 0) + (detail.get("count") or 0)
    return figures


def domain_dmarc_reports(*, domain: Domain) -> QuerySet[DmarcReport]:
    return DmarcReport.objects.filter(domain=domain).prefetch_related("sources").order_by("-begin_at", "-id")


def domain_tls_reports(*, domain: Domain) -> QuerySet[TlsReport]:
    return TlsReport.objects.filter(domain=domain).order_by("-begin_at", "-id")


def domain_dmarc_alerts(*, domain: Domain) -> QuerySet[DmarcAlert]:
    return DmarcAlert.objects.filter(domain=domain)


def monthly_report_get(*, domain: Domain) -> MonthlyReportSetting:
    """The domain's switch (unsaved and off when the partner never set it)."""
    return MonthlyReportSetting.objects.filter(domain=domain).first() or MonthlyReportSetting(domain=domain)
