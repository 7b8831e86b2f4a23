"""DMARC aggregate reports (RFC 7489 appendix C, and the "urn:ietf:params:xml:ns:dmarc-2.0"
namespace of the newer draft) read with defusedxml: no DTD, no entities, no external references,
so an entity expansion or an external entity in a report is refused, never expanded."""
import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from trust.unpack import ReportUnreadable


@dataclass(frozen=True)
class SourceRow:
    source_ip: str
    count: int
    disposition: str
    dkim_aligned: bool
    spf_aligned: bool
    dkim_result: str
    spf_result: str
    header_from: str


@dataclass(frozen=True)
class AggregateReport:
    org_name: str
    reporter_email: str
    report_id: str
    begin_at: datetime
    end_at: datetime
    policy_domain: str
    policy: str
    policy_pct: int | None
    rows: list[SourceRow]


def is_dmarc_xml(data: bytes) -> bool:
    return data.lstrip()[:1] == b"<"


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _child(element: Element | None, name: str) -> Element | None:
    if element is None:
        return None
    return next((child for child in element if _local(child.tag) == name), None)


def _children(element: Element | None, name: str) -> list[Element]:
    return [] if element is None else [child for child in element if _local(child.tag) == name]


def _text(element: Element | None, *path: str, default: str = "") -> str:
    for name in path:
        element = _child(element, name)
    return (element.text or "").strip() if element is not None and element.text else default


def _required(element: Element | None, *path: str) -> str:
    value = _text(element, *path)
    if not value:
        raise ReportUnreadable(f"the DMARC report has no {'/'.join(path)}")
    return value


def _timestamp(value: str) -> datetime:
    try:
        return datetime.fromtimestamp(int(value), tz=UTC)
    except (ValueError, OverflowError, OSError):
        raise ReportUnreadable(f"the DMARC report's date {value!r} is not a Unix time") from None


MAX_COUNT = 1_000_000_000  # messages in one row; more is no real report (and no integer column holds it)


def _count(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise ReportUnreadable(f"a DMARC report row's count {value[:40]!r} is not a number") from None
    if not 0 <= count <= MAX_COUNT:
        raise ReportUnreadable(f"a DMARC report row's count is outside 0 to {MAX_COUNT}")
    return count


def _ip(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ReportUnreadable(f"a DMARC report row's source_ip {value[:60]!r} is not an IP address") from None


def dmarc_report_parse(data: bytes) -> AggregateReport:
    try:
        root = fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise ReportUnreadable("the DMARC report declares a DTD or entities; refused") from None
    except (ParseError, ValueError):
        raise ReportUnreadable("the DMARC report is not well-formed XML") from None
    if _local(root.tag) != "feedback":
        raise ReportUnreadable("the XML is not a DMARC aggregate report (<feedback>)")
    metadata, policy = _child(root, "report_metadata"), _child(root, "policy_published")
    pct = _text(policy, "pct")
    return AggregateReport(
        org_name=_required(metadata, "org_name")[:200],
        reporter_email=_text(metadata, "email")[:254],
        report_id=_required(metadata, "report_id")[:200],
        begin_at=_timestamp(_required(metadata, "date_range", "begin")),
        end_at=_timestamp(_required(metadata, "date_range", "end")),
        policy_domain=_required(policy, "domain").lower().rstrip("."),
        policy=_text(policy, "p", default="none").lower()[:16],
        policy_pct=min(int(pct), 100) if pct.isdigit() else None,
        rows=[_row(record) for record in _children(root, "record")],
    )


def _row(record: Element) -> SourceRow:
    row, auth = _child(record, "row"), _child(record, "auth_results")
    evaluated = _child(row, "policy_evaluated")
    dkim_results = [_text(dkim, "result").lower() for dkim in _children(auth, "dkim")]
    spf_results = [_text(spf, "result").lower() for spf in _children(auth, "spf")]
    return SourceRow(
        source_ip=_ip(_required(row, "source_ip")),
        count=_count(_required(row, "count")),
        disposition=_text(evaluated, "disposition", default="none").lower()[:16],
        dkim_aligned=_text(evaluated, "dkim").lower() == "pass",
        spf_aligned=_text(evaluated, "spf").lower() == "pass",
        dkim_result=_best(dkim_results),
        spf_result=_best(spf_results),
        header_from=_text(record, "identifiers", "header_from").lower()[:253],
    )


def _best(results: list[str]) -> str:
    """pass when any check passed, else the first result ("none" when there was none)."""
    return "pass" if "pass" in results else (results[0][:16] if results else "none")
