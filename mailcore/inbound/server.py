"""The inbound listener: one port, two dialects. After LHLO it speaks LMTP (what Postfix uses:
one reply per recipient after DATA); after EHLO or HELO it speaks SMTP (for tools and local
testing: one recipient per transaction, so the one reply after DATA is exact).

RCPT is answered from the recipient's delivery plan, which DATA then uses (each recipient is
resolved once); DATA is answered only after delivery.
Delivery uses the Django ORM and blocking clients, so it runs in worker threads that keep their
connections; each message is read once and stored with one LMTP transaction, whatever the number
of its recipients. Several processes can serve one port (mailcore.inbound.processes): each runs a
HandedController, serving the sessions the parent accepted.
"""
import logging
import re
import socket

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session, syntax
from django.conf import settings

from mailcore.inbound.delivery import STORE_UNAVAILABLE, deliver_each
from mailcore.store.lmtp import lmtp_close, parse_hostport
from mailcore.inbound.recipients import DeliveryPlan, Rejection, resolve
from mailcore.ormthreads import OrmThreads

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 35 * 1024 * 1024  # the largest plan's attachment cap, advertised as SIZE
ONE_RECIPIENT_PER_SMTP_TRANSACTION = "452 4.5.3 One recipient per transaction here, send the others separately"
DELIVERY_THREADS = 8
HAND_OVER = b"c"  # the byte each connection handed over by the listener's parent (processes.py) travels with


def _plans(envelope: Envelope) -> dict[str, DeliveryPlan]:
    """The delivery plans RCPT resolved for this transaction, by recipient address."""
    if not hasattr(envelope, "delivery_plans"):
        envelope.delivery_plans = {}
    return envelope.delivery_plans


def _one_line(reply: str) -> str:
    return " ".join(reply.split())


# <dot-atom@domain> and what follows it: the path Postfix writes for every MAIL and RCPT.
_PLAIN_PATH = re.compile(r"<((?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+\.)*[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
                         r"@(?:[A-Za-z0-9-]+\.)*[A-Za-z0-9-]+)>(.*)", re.DOTALL)


class InboundProtocol(SMTP):
    """aiosmtpd's SMTP, plus LHLO switching the session to LMTP's per-recipient replies."""

    speaks_lmtp = False
    on_session_end = None  # called when the connection closes (a process serving handed sessions counts them)

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        """aiosmtpd's reading of a MAIL or RCPT path, with a fast path for the plain form: its own
        runs the RFC 5322 header parser (and defines a class) for every address, about a tenth of
        the listener's CPU. Anything else (quoted local parts, comments, UTF-8) goes to it."""
        plain = _PLAIN_PATH.fullmatch(arg.lstrip())
        if plain is None or "(" in plain[2]:  # a comment after the path: the parser's to read
            return super()._getaddr(arg)
        address, rest = plain.groups()
        if self.local_part_limit and len(address.rpartition("@")[0]) > self.local_part_limit:
            return None, None
        return address, rest.lstrip()

    def connection_lost(self, error: Exception | None) -> None:
        super().connection_lost(error)
        if self.on_session_end is not None:
            self.on_session_end()

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
    def __init__(self):
        # Each thread keeps its LMTP session with Dovecot too, closed with its database connection.
        self.threads = OrmThreads(DELIVERY_THREADS, "inbound", on_close=lmtp_close)

    async def handle_RCPT(self, server: InboundProtocol, session: Session, envelope: Envelope,
                          address: str, rcpt_options: list[str]) -> str:
        if not server.speaks_lmtp and envelope.rcpt_tos:
            return ONE_RECIPIENT_PER_SMTP_TRANSACTION
        try:
            plan = await self.threads.run(resolve, address)
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
        envelope_from = "" if envelope.mail_from in (None, "<>") else envelope.mail_from  # <> is a bounce
        plans = _plans(envelope)
        try:
            replies = await self.threads.run(_deliver_to_each, envelope.original_content, envelope_from,
                                             [(recipient, plans.get(recipient)) for recipient in envelope.rcpt_tos])
        except Exception:
            log.exception("delivery to %s failed", envelope.rcpt_tos)
            replies = [STORE_UNAVAILABLE.reply] * len(envelope.rcpt_tos)
        # aiosmtpd writes what we return plus CRLF: LMTP gets one complete reply line per recipient.
        return "\r\n".join(replies) if server.speaks_lmtp else replies[0]


def _deliver_to_each(raw: bytes, envelope_from: str, plans: list[tuple[str, DeliveryPlan | None]]) -> list[str]:
    """Each recipient's reply line."""
    return [_one_line(result.reply) for result in deliver_each(raw, envelope_from, plans)]


class InboundController(Controller):
    """aiosmtpd's threaded controller serving InboundProtocol."""

    def factory(self) -> InboundProtocol:
        return InboundProtocol(self.handler, **self.SMTP_kwargs)

    def stop(self, *args, **kwargs) -> None:
        super().stop(*args, **kwargs)
        self.handler.threads.close()


class HandedController(InboundController):
    """Serves the connections another process accepted and hands over a Unix socket
    (mailcore.inbound.processes): one of several listener processes on one port."""

    def __init__(self, handler: InboundHandler, channel: socket.socket, *, on_session_end, on_parent_gone, **kwargs):
        super().__init__(handler, **kwargs)
        self.channel = channel
        self.on_session_end = on_session_end
        self.on_parent_gone = on_parent_gone

    def factory(self) -> InboundProtocol:
        protocol = super().factory()
        protocol.on_session_end = self.on_session_end
        return protocol

    async def _create_server(self) -> "_HandedServer":
        self.channel.setblocking(False)
        self.loop.add_reader(self.channel, self._take_handed)
        return _HandedServer(self)

    def _trigger_server(self) -> None:
        """There is no port of our own to connect to: make the protocol once, as a first session would."""
        self.loop.call_soon_threadsafe(self._factory_invoker)

    def _take_handed(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.channel, len(HAND_OVER), 1)
        except (BlockingIOError, InterruptedError):
            return
        if not data:  # the parent closed its end: it is gone
            self.loop.remove_reader(self.channel)
            self.on_parent_gone()
            return
        if not fds:  # the kernel could not give us the descriptor (too many open files): that sender retries
            log.warning("a handed session was lost: no file descriptor came with it")
            return
        connection = socket.socket(fileno=fds[0])
        self.loop.create_task(self.loop.connect_accepted_socket(self._factory_invoker, connection))


class _HandedServer:
    """What aiosmtpd's controller closes when it stops, in place of an asyncio server."""

    def __init__(self, controller: HandedController):
        self.controller = controller

    def close(self) -> None:
        self.controller.loop.remove_reader(self.controller.channel)
        self.controller.channel.close()

    async def wait_closed(self) -> None:
        return None


def handed_controller(channel: socket.socket, *, on_session_end, on_parent_gone,
                      max_message_bytes: int = MAX_MESSAGE_BYTES) -> HandedController:
    return HandedController(
        InboundHandler(), channel, on_session_end=on_session_end, on_parent_gone=on_parent_gone,
        server_hostname=settings.MAIL_HOST, data_size_limit=max_message_bytes, enable_SMTPUTF8=True,
        ident="Mailwell inbound",
    )


def inbound_controller(listen: str, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> InboundController:
    host, port = parse_hostport(listen, 2424)
    return InboundController(
        InboundHandler(), hostname=host, port=port, server_hostname=settings.MAIL_HOST,
        data_size_limit=max_message_bytes, enable_SMTPUTF8=True, ident="Mailwell inbound",
    )
