"""The inbound listener: one port, two dialects. After LHLO it speaks LMTP (what Postfix uses:
one reply per recipient after DATA); after EHLO or HELO it speaks SMTP (for tools and local
testing: one recipient per transaction, so the one reply after DATA is exact).

RCPT is answered from the recipient's delivery plan, which DATA then uses (each recipient is
resolved once); DATA is answered only after delivery.
Mail spoken in SMTP (the internet's, through Postfix's port-25 before-queue proxy, or sent
directly) is screened before it is stored (mailcore.inbound.screening) with the connection's facts:
the client's address and HELO, as a trusted Postfix tells them with XFORWARD (INBOUND_XFORWARD_FROM)
or as this connection shows them; a refusal or deferral is the SMTP reply, so the sender hears it in
its own session (no bounce). LMTP is Postfix's after-queue hand-off of mail it took from the app's
relay and owners' submissions (scored as outbound mail): it is delivered unscreened.
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
from mailcore.inbound.screening import Arriving
from mailcore.ipnets import ip_in_list
from mailcore.store.lmtp import lmtp_close, parse_hostport
from mailcore.inbound.recipients import DeliveryPlan, Rejection, resolve
from mailcore.ormthreads import OrmThreads

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 35 * 1024 * 1024  # the largest plan's attachment cap, advertised as SIZE
ONE_RECIPIENT_PER_SMTP_TRANSACTION = "452 4.5.3 One recipient per transaction here, send the others separately"
DELIVERY_THREADS = 8
XFORWARD_ATTRIBUTES = ("NAME", "ADDR", "PROTO", "HELO", "SOURCE")
XFORWARD_REFUSED = "550 5.7.0 XFORWARD is not permitted from this address"
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


def _peer_ip(session: Session) -> str | None:
    peer = session.peer
    return peer[0] if isinstance(peer, tuple) and peer else None


def xforward_trusted(session: Session) -> bool:
    """Whether this connection is a Postfix whose XFORWARD we believe."""
    address = _peer_ip(session)
    return address is not None and ip_in_list(address, settings.INBOUND_XFORWARD_FROM)


def _xforward(envelope: Envelope) -> dict[str, str]:
    """What a trusted Postfix told of the client for this transaction (reset with the envelope)."""
    if not hasattr(envelope, "xforward"):
        envelope.xforward = {}
    return envelope.xforward


def arriving(session: Session, envelope: Envelope, envelope_from: str) -> Arriving:
    """The connection's facts for the screener: XFORWARD's when a trusted Postfix gave them."""
    told = _xforward(envelope)
    return Arriving(client_ip=told.get("ADDR") or _peer_ip(session), helo=told.get("HELO") or session.host_name,
                    envelope_from=envelope_from, recipients=tuple(envelope.rcpt_tos))


class InboundProtocol(SMTP):
    """aiosmtpd's SMTP, plus LHLO switching the session to LMTP's per-recipient replies and Postfix's
    XFORWARD (the internet client's facts, from a trusted proxy)."""

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

    async def smtp_XFORWARD(self, arg: str) -> None:
        """Postfix's XFORWARD (www.postfix.org/XFORWARD_README.html): NAME, ADDR, PROTO, HELO and
        SOURCE of the client it is proxying, before MAIL; believed only from INBOUND_XFORWARD_FROM."""
        if not xforward_trusted(self.session):
            await self.push(XFORWARD_REFUSED)
            return
        if self.envelope.mail_from is not None:
            await self.push("503 5.5.1 Error: XFORWARD comes before MAIL")
            return
        told = {}
        for item in (arg or "").split():
            name, equals, value = item.partition("=")
            if not equals or name.upper() not in XFORWARD_ATTRIBUTES:
                await self.push("501 5.5.4 Syntax: XFORWARD attribute=value...")
                return
            told[name.upper()] = value
        for name, value in told.items():
            if value.upper() in ("[UNAVAILABLE]", "[TEMPUNAVAIL]"):
                continue
            if name == "ADDR" and value.upper().startswith("IPV6:"):
                value = value[5:]
            _xforward(self.envelope)[name] = value
        await self.push("250 2.0.0 Ok")

    async def smtp_HELO(self, arg: str) -> None:
        self.speaks_lmtp = False
        await super().smtp_HELO(arg)


class InboundHandler:
    def __init__(self):
        # Each thread keeps its LMTP session with Dovecot too, closed with its database connection.
        self.threads = OrmThreads(DELIVERY_THREADS, "inbound", on_close=lmtp_close)

    async def handle_EHLO(self, server: InboundProtocol, session: Session, envelope: Envelope, hostname: str,
                          responses: list[str]) -> list[str]:
        """Offers XFORWARD to a trusted Postfix (its before-queue proxy sends the client's facts)."""
        session.host_name = hostname
        if xforward_trusted(session):
            responses.insert(-1, "250-XFORWARD " + " ".join(XFORWARD_ATTRIBUTES))
        return responses

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
        facts = None if server.speaks_lmtp else arriving(session, envelope, envelope_from)
        try:
            replies = await self.threads.run(_deliver_to_each, envelope.original_content, envelope_from,
                                             [(recipient, plans.get(recipient)) for recipient in envelope.rcpt_tos],
                                             facts)
        except Exception:
            log.exception("delivery to %s failed", envelope.rcpt_tos)
            replies = [STORE_UNAVAILABLE.reply] * len(envelope.rcpt_tos)
        # aiosmtpd writes what we return plus CRLF: LMTP gets one complete reply line per recipient.
        return "\r\n".join(replies) if server.speaks_lmtp else replies[0]


def _deliver_to_each(raw: bytes, envelope_from: str, plans: list[tuple[str, DeliveryPlan | None]],
                     facts: Arriving | None) -> list[str]:
    """Each recipient's reply line."""
    return [_one_line(result.reply) for result in deliver_each(raw, envelope_from, plans, arriving=facts)]


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
