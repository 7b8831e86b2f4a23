"""Writes: a parsed report kept once per domain (organisation + report id), with its sources
classified and its alerts raised in the same transaction; the monthly report's switch."""
from django.db import IntegrityError, transaction

from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from trust.alerts import dmarc_alerts_raise
from trust.dmarc_xml import AggregateReport
from trust.models import DmarcReport, DmarcSource, MonthlyReportSetting, TlsReport
from trust.sources import is_our_server, reverse_name
from trust.tlsrpt_json import TlsReportData
from trust.unpack import ReportUnreadable


# PTR look-ups per report, made while the sender waits for our reply (before the transaction): a report
# from a big receiver lists tens of sources; one with thousands must not hold the session for minutes.
MAX_REVERSE_LOOKUPS = 50


def _about_domain(domain: Domain, policy_domain: str) -> bool:
    """A report about the domain or one of its subdomains (reports for subdomains name them)."""
    return policy_domain == domain.name or policy_domain.endswith(f".{domain.name}")


def report_domain_check(*, domain: Domain, report: AggregateReport | TlsReportData) -> None:
    """Raises ReportUnreadable for a report about another domain (it must not count as this one's)."""
    names = [report.policy_domain] if isinstance(report, AggregateReport) else report.policy_domains
    if not any(_about_domain(domain, name) for name in names):
        kind = "DMARC" if isinstance(report, AggregateReport) else "TLS"
        raise ReportUnreadable(f"the {kind} report is about {', '.join(names) or 'no domain'}, not {domain.name}")


def dmarc_report_store(*, domain: Domain, report: AggregateReport) -> tuple[DmarcReport, bool]:
    """The report kept, and whether it is new (a second delivery of it stores nothing)."""
    report_domain_check(domain=domain, report=report)
    existing = DmarcReport.objects.filter(domain=domain, org_name=report.org_name, report_id=report.report_id).first()
    if existing is not None:
        return existing, False
    addresses = sorted({row.source_ip for row in report.rows})
    names = {ip: reverse_name(ip) if n < MAX_REVERSE_LOOKUPS else "" for n, ip in enumerate(addresses)}
    try:
        with transaction.atomic():
            stored = DmarcReport.objects.create(
                domain=domain, org_name=report.org_name, report_id=report.report_id,
                reporter_email=report.reporter_email, begin_at=report.begin_at, end_at=report.end_at,
                policy_domain=report.policy_domain, policy=report.policy, policy_pct=report.policy_pct)
            DmarcSource.objects.bulk_create(DmarcSource(
                report=stored, source_ip=row.source_ip, reverse_name=names[row.source_ip],
                ours=is_our_server(row.source_ip), count=row.count, disposition=row.disposition,
                dkim_aligned=row.dkim_aligned, spf_aligned=row.spf_aligned, dkim_result=row.dkim_result,
                spf_result=row.spf_result, header_from=row.header_from) for row in report.rows)
            dmarc_alerts_raise(report=stored)
    except IntegrityError:  # the same report delivered twice at once: the other delivery kept it
        return DmarcReport.objects.get(domain=domain, org_name=report.org_name, report_id=report.report_id), False
    return stored, True


def tls_report_store(*, domain: Domain, report: TlsReportData) -> tuple[TlsReport, bool]:
    report_domain_check(domain=domain, report=report)
    try:
        with transaction.atomic():
            return TlsReport.objects.get_or_create(
                domain=domain, org_name=report.org_name, report_id=report.report_id,
                defaults={"begin_at": report.begin_at, "end_at": report.end_at, "successes": report.successes,
                          "failures": report.failures, "failure_details": report.failure_details})
    except IntegrityError:
        return TlsReport.objects.get(domain=domain, org_name=report.org_name, report_id=report.report_id), False


def monthly_report_set(*, domain: Domain, enabled: bool | None = None, send_to: str | None = None
                       ) -> MonthlyReportSetting:
    """Switch the client's monthly report on or off; on needs an address to send it to."""
    setting = MonthlyReportSetting.objects.filter(domain=domain).first() or MonthlyReportSetting(domain=domain)
    if send_to is not None:
        setting.send_to = send_to.strip().lower()
    if enabled is not None:
        setting.enabled = enabled
    if setting.enabled and not setting.send_to:
        raise InvalidFields({"send_to": ["the client's contact address is needed to send the monthly report"]})
    setting.save()
    return setting
