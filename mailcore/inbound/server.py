"""The inbound listener: one port, two dialects. After LHLO it speaks LMTP (what Postfix uses:
one reply per recipient after DATA); after EHLO or HELO it speaks SMTP (for tools and local
testing: one recipient per transaction, so the one reply after DATA is exact).

RCPT is answered from the recipient's delivery plan, which DATA then uses (each recipient is
resolved once); DATA is answered only after delivery.
Delivery uses the Django ORM and blocking clients, so it runs in a worker thread.
"""
import asyncio
import logging
from functools import partial

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session, syntax
from django.conf import settings
from django.db import connections

from mailcore.inbound.delivery import STORE_UNAVAILABLE, deliver
from mailcore.store.lmtp import parse_hostport
from mailcore.inbound.recipients import DeliveryPlan, Rejection, resolve

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 35 * 1024 * 1024  # the largest plan's attachment cap, advertised as SIZE
ONE_RECIPIENT_PER_SMTP_TRANSACTION = "452 4.5.3 One recipient per transaction here, send the others separately"


async def _in_thread(function, *args):
    """Run ORM work in a worker thread; its connection is closed after, so the thread pool never
    holds connections open (a connect costs a few milliseconds per message)."""

    def run():
        try:
            return function(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(run)


def _plans(envelope: Envelope) -> dict[str, DeliveryPlan]:
    """The delivery plans RCPT resolved for this transaction, by recipient address."""
    if not hasattr(envelope, "delivery_plans"):
        envelope.delivery_plans = {}
    return envelope.delivery_plans


def _one_line(reply: str) -> str:
    return " ".join(reply.split())


class InboundProtocol(SMTP):
    """aiosmtpd's SMTP, plus LHLO switching the session to LMTP's per-recipient replies."""

    speaks_lmtp = False

    @syntax("LHLO hostname")
    async def smtp_LHLO(self, arg: str) -> None:
        self.speaks_lmtp = True
        await super().smtp_EHLO(arg)

    async def smtp_EHLO(self, arg: str) -> None:
        self.speaks_lmtp = False
        await super().smtp_EHLO(arg)

    async def smtp_HELO(self, arg: str) -> None:
        self.speaks_lmtp = False
        await super().smtp_HELO(arg)


class InboundHandler:
    async def handle_RCPT(self, server: InboundProtocol, session: Session, envelope: Envelope,
                          address: str, rcpt_options: list[str]) -> str:
        if not server.speaks_lmtp and envelope.rcpt_tos:
            return ONE_RECIPIENT_PER_SMTP_TRANSACTION
        try:
            plan = await _in_thread(resolve, address)
        except Exception:
            log.exception("resolving %s failed", address)
            return STORE_UNAVAILABLE.reply
        if isinstance(plan, Rejection):
            log.info("%s rejected at RCPT: %s", address, plan.reply)
            return plan.reply
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        _plans(envelope)[address] = plan
        return "250 2.1.5 Recipient ok"

    async def handle_DATA(self, server: InboundProtocol, session: Session, envelope: Envelope) -> str:
        replies = []
        envelope_from = "" if envelope.mail_from in (None, "<>") else envelope.mail_from  # <> is a bounce
        plans = _plans(envelope)
        for recipient in envelope.rcpt_tos:
            try:
                result = await _in_thread(partial(deliver, plan=plans.get(recipient)), envelope.original_content,
                                          recipient, envelope_from)
                replies.append(_one_line(result.reply))
            except Exception:
                log.exception("delivery to %s failed", recipient)
                replies.append(STORE_UNAVAILABLE.reply)
        # aiosmtpd writes what we return plus CRLF: LMTP gets one complete reply line per recipient.
        return "\r\n".join(replies) if server.speaks_lmtp else replies[0]


class InboundController(Controller):
    """aiosmtpd's threaded controller serving InboundProtocol."""

    def factory(self) -> InboundProtocol:
        return InboundProtocol(self.handler, **self.SMTP_kwargs)


def inbound_controller(listen: str, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> InboundController:
    host, port = parse_hostport(listen, 2424)
    return InboundController(
        InboundHandler(), hostname=host, port=port, server_hostname=settings.MAIL_HOST,
        data_size_limit=max_message_bytes, enable_SMTPUTF8=True, ident="Mailwell inbound",
    )
