"""SMTP TLS reports (RFC 8460): JSON, usually gzip-compressed, with a summary and failure details
per policy."""
import json
from dataclasses import dataclass
from datetime import datetime

from trust.unpack import ReportUnreadable


MAX_SESSIONS = 1_000_000_000  # a day's sessions in one report; more is no real report


@dataclass(frozen=True)
class TlsReportData:
    org_name: str
    report_id: str
    begin_at: datetime
    end_at: datetime
    policy_domains: list[str]
    successes: int
    failures: int
    failure_details: list[dict]


def is_tlsrpt_json(data: bytes) -> bool:
    return data.lstrip()[:1] == b"{"


def _field(mapping: dict, name: str, kind: type):
    value = mapping.get(name) if isinstance(mapping, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ReportUnreadable(f"the TLS report has no valid {name!r}")
    return value


def _moment(value: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ReportUnreadable(f"the TLS report's date {value!r} is not RFC 3339") from None
    if moment.tzinfo is None:
        raise ReportUnreadable(f"the TLS report's date {value!r} has no time zone")
    return moment


def tls_report_parse(data: bytes) -> TlsReportData:
    try:
        report = json.loads(data)
    except (ValueError, RecursionError):
        raise ReportUnreadable("the TLS report is not valid JSON") from None
    dates = _field(report, "date-range", dict)
    policies = _field(report, "policies", list)
    successes = failures = 0
    domains, details = [], []
    for entry in policies:
        policy, summary = _field(entry, "policy", dict), _field(entry, "summary", dict)
        domains.append(_field(policy, "policy-domain", str).lower().rstrip("."))
        successes += min(max(0, _field(summary, "total-successful-session-count", int)), MAX_SESSIONS)
        failures += min(max(0, _field(summary, "total-failure-session-count", int)), MAX_SESSIONS)
        for detail in entry.get("failure-details") or []:
            if isinstance(detail, dict):
                details.append({
                    "result_type": str(detail.get("result-type", ""))[:64],
                    "sending_mta_ip": str(detail.get("sending-mta-ip", ""))[:64],
                    "receiving_mx_hostname": str(detail.get("receiving-mx-hostname", ""))[:253],
                    "count": min(max(0, count), MAX_SESSIONS) if isinstance(
                        count := detail.get("failed-session-count"), int) else 0,
                })
    if successes > MAX_SESSIONS or failures > MAX_SESSIONS:
        raise ReportUnreadable(f"the TLS report counts more than {MAX_SESSIONS} sessions")
    return TlsReportData(
        org_name=_field(report, "organization-name", str)[:200],
        report_id=_field(report, "report-id", str)[:200],
        begin_at=_moment(_field(dates, "start-datetime", str)),
        end_at=_moment(_field(dates, "end-datetime", str)),
        policy_domains=domains,
        successes=successes,
        failures=failures,
        failure_details=details[:100],
    )
