"""The boundary to Dovecot's LMTP server: hand one message to one mailbox and return its reply.

One recipient per transaction: after DATA an LMTP server answers once per recipient, and
smtplib reads only the first answer. Each thread keeps its connection for the next message (an
LMTP session carries any number of transactions), so a burst costs one connect per thread, not one
per message. A kept connection the server has closed is replaced only when MAIL fails on it, before
anything of the message was sent; a failure after DATA is a 451, never a silent retry.
"""
import smtplib
import threading
import time

LMTP_TIMEOUT_SECONDS = 60
IDLE_SECONDS = 30  # a kept connection idle longer than this is closed rather than trusted

_kept = threading.local()


class _Gone(Exception):
    """The kept connection was closed by the server before the transaction started."""


def parse_hostport(value: str, default_port: int) -> tuple[str, int]:
    """"host:port", "[v6]:port" or "host" into (host, port)."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, int(rest.lstrip(":") or default_port)
    host, colon, port = value.rpartition(":")
    if not colon or ":" in host:  # no port, or a bare IPv6 address
        return value, default_port
    return host, int(port)


def lmtp_deliver(address: str, *, envelope_from: str, recipient: str, raw: bytes) -> str:
    """The server's reply for this recipient, e.g. "250 2.0.0 <x@y> Saved"; 451 4.3.0 when unreachable."""
    server = parse_hostport(address, 24)
    options = [] if raw.isascii() else ["BODY=8BITMIME"]
    try:
        try:
            return _transaction(_client(server), envelope_from, recipient, raw, options)
        except _Gone:
            _drop(server)
            return _transaction(_client(server), envelope_from, recipient, raw, options)
    except (OSError, smtplib.SMTPException, _Gone) as error:
        _drop(server)
        return f"451 4.3.0 Mail store unavailable ({error.__class__.__name__}), try again later"
    finally:
        _mark_used(server)


def lmtp_close() -> None:
    """Close this thread's kept connections (a worker thread that is about to end)."""
    for server in list(_connections()):
        _drop(server)


def _transaction(client: smtplib.LMTP, envelope_from: str, recipient: str, raw: bytes, options: list[str]) -> str:
    try:
        code, text = client.mail(envelope_from, options)
    except (OSError, smtplib.SMTPServerDisconnected):
        raise _Gone from None
    if code == 421:
        raise _Gone
    if code == 250:
        code, text = client.rcpt(recipient)
        if code in (250, 251):
            try:
                code, text = client.data(raw)
            except smtplib.SMTPDataError as refused:  # DATA itself refused (no 354)
                code, text = refused.smtp_code, refused.smtp_error
            if code == 250:
                return f"250 2.0.0 Delivered to {recipient}"
    client.rset()  # the refused transaction is ended; the session stays usable
    return _reply(code, text)


def _reply(code: int, text: bytes | str) -> str:
    return f"{code} {text.decode('utf-8', errors='replace') if isinstance(text, bytes) else text}"


def _connections() -> dict[tuple[str, int], tuple[smtplib.LMTP, float]]:
    if not hasattr(_kept, "connections"):
        _kept.connections = {}
    return _kept.connections


def _client(server: tuple[str, int]) -> smtplib.LMTP:
    """This thread's open session with the server, or a new one (LHLO sent)."""
    kept = _connections().get(server)
    if kept and time.monotonic() - kept[1] < IDLE_SECONDS:
        return kept[0]
    _drop(server)
    client = smtplib.LMTP(*server, timeout=LMTP_TIMEOUT_SECONDS)
    client.ehlo()
    _connections()[server] = (client, time.monotonic())
    return client


def _mark_used(server: tuple[str, int]) -> None:
    kept = _connections().get(server)
    if kept:
        _connections()[server] = (kept[0], time.monotonic())


def _drop(server: tuple[str, int]) -> None:
    kept = _connections().pop(server, None)
    if kept:
        kept[0].close()  # no QUIT: the connection may be the one that just failed
