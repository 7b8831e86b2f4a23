"""Mail to a domain's report addresses (DMARC aggregate, TLS-RPT): the kernel accepts it at RCPT
(recipients.ReportPlan) and hands the message to the app that reads reports, which registers here
in its AppConfig.ready(). Never stored in a mailbox."""
import logging

from mailcore.hooks import Hook
from mailcore.inbound.recipients import Rejection, ReportPlan

log = logging.getLogger(__name__)

# A report arrived (called with raw=, domain=, kind=, envelope_from=): the one registered function
# answers a Rejection when the message cannot be taken (the sender is told), else None (accepted).
report_received = Hook("report_received")

REPORT_ACCEPTED = "250 2.0.0 Report accepted"


def report_deliver(raw: bytes, plan: ReportPlan, envelope_from: str) -> str:
    """This recipient's reply: accepted (read, or dropped when no app reads reports) or refused."""
    answer = report_received.answer(None, raw=raw, domain=plan.domain, kind=plan.kind, envelope_from=envelope_from)
    if isinstance(answer, Rejection):
        return answer.reply
    if not report_received.functions:
        log.info("a %s report for %s arrived and no app reads reports; dropped", plan.kind, plan.domain.name)
    return REPORT_ACCEPTED
