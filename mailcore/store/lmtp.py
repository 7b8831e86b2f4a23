"""The boundary to Dovecot's LMTP server: hand one message to its mailboxes and return each reply.

One transaction carries all of a message's recipients, as Postfix sends them: after DATA an LMTP
server answers once per accepted recipient, in RCPT order (smtplib's data() reads the first answer,
getreply() the others). Each thread keeps its connection for the next message (an LMTP session
carries any number of transactions), so a burst costs one connect per thread, not one per message.
A kept connection the server has closed is replaced only when MAIL fails on it, before anything of
the message was sent; a failure after DATA is a 451 for each recipient not yet answered, never a
silent retry.
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


def lmtp_deliver_many(address: str, *, envelope_from: str, recipients: list[str], raw: bytes) -> dict[str, str]:
    """Each recipient's reply from one transaction (distinct addresses), e.g. "250 2.0.0 Delivered to
    x@y" or "552 5.2.2 ..."; 451 4.3.0 for each one the server did not answer (unreachable)."""
    server = parse_hostport(address, 24)
    options = [] if raw.isascii() else ["BODY=8BITMIME"]
    replies: dict[str, str] = {}
    try:
        try:
            _transaction(_client(server), envelope_from, recipients, raw, options, replies)
        except _Gone:
            _drop(server)
            _transaction(_client(server), envelope_from, recipients, raw, options, replies)
    except (OSError, smtplib.SMTPException, _Gone) as error:
        _drop(server)
        unavailable = f"451 4.3.0 Mail store unavailable ({error.__class__.__name__}), try again later"
        for recipient in recipients:  # the replies the server gave before failing stand
            replies.setdefault(recipient, unavailable)
    finally:
        _mark_used(server)
    return {recipient: replies[recipient] for recipient in recipients}


def lmtp_close() -> None:
    """Close this thread's kept connections (a worker thread that is about to end)."""
    for server in list(_connections()):
        _drop(server)


def _transaction(client: smtplib.LMTP, envelope_from: str, recipients: list[str], raw: bytes, options: list[str],
                 replies: dict[str, str]) -> None:
    """Fills `replies` as the server answers; a refused transaction is RSET, the session stays usable."""
    try:
        code, text = client.mail(envelope_from, options)
    except (OSError, smtplib.SMTPServerDisconnected):
        raise _Gone from None
    if code == 421:
        raise _Gone
    if code != 250:
        replies.update((recipient, _reply(code, text)) for recipient in recipients)
        client.rset()
        return
    accepted = []
    for recipient in recipients:
        code, text = client.rcpt(recipient)
        if code in (250, 251):
            accepted.append(recipient)
        else:
            replies[recipient] = _reply(code, text)
    if not accepted:
        client.rset()
        return
    _data(client, raw, accepted, replies)


def _data(client: smtplib.LMTP, raw: bytes, accepted: list[str], replies: dict[str, str]) -> None:
    try:
        first = client.data(raw)
    except smtplib.SMTPDataError as refused:  # DATA itself refused (no 354): for every recipient
        replies.update((recipient, _reply(refused.smtp_code, refused.smtp_error)) for recipient in accepted)
        client.rset()
        return
    for index, recipient in enumerate(accepted):
        code, text = first if index == 0 else client.getreply()
        replies[recipient] = f"250 2.0.0 Delivered to {recipient}" if code == 250 else _reply(code, text)


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
