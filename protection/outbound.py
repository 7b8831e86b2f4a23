"""Outbound screening (the kernel's mailcore.sending.screening): a send is scored by rspamd, as the
authenticated mailbox it comes from, before it leaves through our relay; at OUTBOUND_HOLD_AT or more
(or with a virus) it is held for its account to release or reject. Owners' mail (webmail, port 587)
is always scored; mail sent through the API is scored unless the sending mailbox's plan exempts it
(Plan.score_api_sends, for integrators). docs/decisions.md says why, and why a scanner that cannot
be reached lets mail leave unscored rather than holding everyone's mail."""
import logging

from django.conf import settings

from mailcore.outbound.models import OutboundMessage
from mailcore.sending.screening import Hold, Origin
from protection.rspamd import Scan, ScannerUnavailable, check

log = logging.getLogger(__name__)

MAX_REASONS = 6


def outbound_exempt(message: OutboundMessage, origin: Origin) -> bool:
    return origin == Origin.API and not message.mailbox.effective_plan.score_api_sends


def outbound_screen(*, message: OutboundMessage, raw: bytes, origin: Origin) -> Hold | None:
    if not settings.RSPAMD_URL or outbound_exempt(message, origin):
        return None
    address = message.mailbox.address
    try:
        scan = check(raw, client_ip="", helo=settings.MAIL_HOST, envelope_from=address,
                     recipients=message.payload.get("pending", []), user=address)
    except ScannerUnavailable as unavailable:
        log.warning("outbound message %s from %s leaves unscored: %s", message.message_id, address, unavailable)
        return None
    threshold = settings.OUTBOUND_HOLD_AT
    if scan.score < threshold and not scan.is_virus:
        return None
    return Hold(score=scan.score, threshold=threshold, reasons=outbound_reasons(scan))


def outbound_reasons(scan: Scan) -> tuple[str, ...]:
    """The rules that weighed most, in rspamd's own words (a partner reads them)."""
    if scan.is_virus:
        return (f"It carries a virus: {scan.virus}",)
    weighed = sorted(((symbol.score, name, symbol.description) for name, symbol in scan.symbols.items()
                      if symbol.score > 0), reverse=True)
    reasons = [f"{description or name} ({score:+.1f})" for score, name, description in weighed[:MAX_REASONS]]
    if scan.smtp_message:  # a rule that decides alone (GTUBE) says so here, its symbol scoring nothing
        reasons.insert(0, scan.smtp_message)
    if not reasons:
        reasons = [name for name, symbol in scan.symbols.items() if symbol.score >= 0][:MAX_REASONS]
    return tuple(reasons)
