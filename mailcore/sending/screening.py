"""The moment a send is judged before it leaves through our relay: the kernel asks the one function
a feature app registered (protection: rspamd's outbound score) whether to hold it. A held send waits
(status `held`, nothing handed over) until its account releases or rejects it; `email.held` tells the
account (the hosting partner, for its clients' mailboxes) at once, with a notice by mail.

Only mail that would leave through our own relay is asked about: sandbox sends never leave, and a
connected mailbox's provider sends as itself, from its own addresses."""
from dataclasses import dataclass, field
from enum import StrEnum

from mailcore.hooks import Hook
from mailcore.outbound.models import OutboundMessage


class Origin(StrEnum):
    """Who wrote a send, as the screener weighs it (integrators may be exempt by plan)."""

    WEBMAIL = "webmail"  # the owner, in the webmail
    SUBMISSION = "submission"  # the owner's own mail client, port 587
    API = "api"  # REST, MCP and campaigns: an integrator's program or an agent


def send_origin(message: OutboundMessage) -> Origin:
    payload = message.payload
    if "submitted" in payload:
        return Origin.SUBMISSION
    if payload.get("webmail"):
        return Origin.WEBMAIL
    return Origin.API


@dataclass(frozen=True)
class Hold:
    """The screener's answer for a send to keep back: why, in its words."""

    score: float
    threshold: float
    reasons: tuple[str, ...] = field(default_factory=tuple)


# Called as outbound_screening.answer(None, message=OutboundMessage, raw=bytes, origin=Origin); returns
# a Hold, or None to send. A screener that cannot judge answers None itself (the decision is its own
# and documented); an exception here is handled as any error while sending (the send is retried).
outbound_screening = Hook("sending.outbound_screening")
