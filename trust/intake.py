"""Mail to a domain's report addresses, as the kernel's listener hands it over (the hook
mailcore.inbound.reports.report_received): every report file in it is unpacked, parsed and kept;
a message with none, or with one we refuse (a bomb, an XML entity attack, a report about another
domain), is answered 550 5.6.0 with the reason and nothing of it is kept."""
import logging
from email import message_from_bytes

from mailcore.domains.models import Domain
from mailcore.inbound.recipients import Rejection
from trust.dmarc_xml import AggregateReport, dmarc_report_parse, is_dmarc_xml
from trust.services import dmarc_report_store, report_domain_check, tls_report_store
from trust.tlsrpt_json import is_tlsrpt_json, tls_report_parse
from trust.unpack import ReportUnreadable, report_files

log = logging.getLogger(__name__)


def _refused(reason: str) -> Rejection:
    return Rejection(550, "5.6.0", f"Report not accepted: {reason}")


def report_receive(*, raw: bytes, domain: Domain, kind: str, envelope_from: str) -> Rejection | None:
    try:
        files = report_files(message_from_bytes(raw))
        parsed = [_parse(data) for data in files]
        if not parsed:
            raise ReportUnreadable("the message carries no DMARC or TLS report (.xml, .xml.gz, .zip, .json.gz)")
        for report in parsed:  # every one is checked before any is kept
            report_domain_check(domain=domain, report=report)
        for report in parsed:
            if isinstance(report, AggregateReport):
                dmarc_report_store(domain=domain, report=report)
            else:
                tls_report_store(domain=domain, report=report)
    except ReportUnreadable as why:
        log.info("a %s report for %s from <%s> refused: %s", kind, domain.name, envelope_from, why)
        return _refused(str(why))
    return None


def _parse(data: bytes):
    if is_dmarc_xml(data):
        return dmarc_report_parse(data)
    if is_tlsrpt_json(data):
        return tls_report_parse(data)
    raise ReportUnreadable("an attachment is neither DMARC XML nor TLS-RPT JSON")
