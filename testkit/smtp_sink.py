"""Real servers on loopback for mail tests: a free port, an SMTP sink that keeps what it receives,
and our own inbound listener."""
import asyncio
import socket
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes


@dataclass
class SinkHandler:
    """Keeps every message; refuses the RCPT addresses listed in `refuse` with their reply; with
    `close_after`, closes a session once it has taken that many messages (as relays limit them)."""

    messages: list[Received] = field(default_factory=list)
    refuse: dict[str, str] = field(default_factory=dict)
    greetings: int = 0  # EHLO/HELO seen: how many SMTP sessions clients opened
    close_after: int = 0

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.greetings += 1
        session.host_name = hostname
        return responses

    async def handle_HELO(self, server, session, envelope, hostname):
        self.greetings += 1
        session.host_name = hostname
        return f"250 {server.hostname}"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.original_content))
        session.taken = getattr(session, "taken", 0) + 1
        if self.close_after and session.taken >= self.close_after:
            asyncio.get_running_loop().call_soon(server.transport.close)  # right after the reply is out
        return "250 OK: queued"


@contextmanager
def smtp_sink(*, server_options: dict | None = None, handler: SinkHandler | None = None, **handler_options):
    """An SMTP server on 127.0.0.1 (aiosmtpd.SMTP options in server_options); yields (port, handler).
    `handler`: a SinkHandler subclass's instance that behaves otherwise somewhere."""
    handler = handler or SinkHandler(**handler_options)
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, **(server_options or {}))
    controller.start()
    try:
        yield port, handler
    finally:
        controller.stop()


@contextmanager
def inbound_listener(**options):
    """Our listener (mailcore.inbound.server) on 127.0.0.1; yields its port."""
    from mailcore.inbound.server import inbound_controller

    port = free_port()
    controller = inbound_controller(f"127.0.0.1:{port}", **options)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


@contextmanager
def submission_intake():
    """Our submission intake (mailcore.sending.intake) on 127.0.0.1; yields its port."""
    from mailcore.sending.intake import submission_controller

    port = free_port()
    controller = submission_controller(f"127.0.0.1:{port}")
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


@contextmanager
def dovecot_relay(next_hop: str):
    """Our relay for the mail Dovecot sends (mailcore.outbound.dovecot_relay) on 127.0.0.1, handing
    what it signed to `next_hop` (an SMTP URL); yields its port."""
    from mailcore.outbound.dovecot_relay import dovecot_relay_controller

    port = free_port()
    controller = dovecot_relay_controller(f"127.0.0.1:{port}", next_hop=next_hop)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()
