"""The boundary to Dovecot's LMTP server: hand one message to its mailboxes and return each reply.

One transaction carries all of a message's recipients, as Postfix sends them: after DATA an LMTP
server answers once per accepted recipient, in RCPT order. MAIL, the RCPTs and DATA go in one write
and their replies are read after it (PIPELINING, RFC 2920, which Dovecot offers; without it they
go one at a time), so a message costs two round trips instead of three or more. Each thread keeps
its connection for the next message (an LMTP session carries any number of transactions), so a
burst costs one connect per thread, not one per message. A kept connection the server has closed
is replaced only when MAIL fails on it, before anything of the message was sent; a failure after
DATA is a 451 for each recipient not yet answered, never a silent retry.
"""
import re
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
    commands = [f"MAIL FROM:{smtplib.quoteaddr(envelope_from)}{''.join(' ' + option for option in options)}\r\n",
                *(f"RCPT TO:{smtplib.quoteaddr(recipient)}\r\n" for recipient in recipients), "DATA\r\n"]
    pipelined = client.has_extn("pipelining")
    try:
        client.send("".join(commands) if pipelined else commands[0])
        code, text = client.getreply()
    except (OSError, smtplib.SMTPServerDisconnected):
        raise _Gone from None
    if code == 421:
        raise _Gone
    answers = [_answer(client, command, pipelined) for command in commands[1:]]
    rcpt_answers, (data_code, data_text) = answers[:-1], answers[-1]
    accepted = [recipient for recipient, (rcpt_code, _) in zip(recipients, rcpt_answers) if rcpt_code in (250, 251)]
    if code != 250:
        replies.update((recipient, _reply(code, text)) for recipient in recipients)
    else:
        replies.update((recipient, _reply(*answer)) for recipient, answer in zip(recipients, rcpt_answers)
                       if recipient not in accepted)
    if code != 250 or not accepted:
        if data_code == 354:  # a server that should have refused DATA: end the session rather than guess
            raise smtplib.SMTPResponseException(data_code, b"DATA accepted without a recipient")
        client.rset()
        return
    if data_code != 354:
        replies.update((recipient, _reply(data_code, data_text)) for recipient in accepted)
        client.rset()
        return
    client.send(_data_lines(raw))
    for recipient in accepted:
        code, text = client.getreply()
        replies[recipient] = f"250 2.0.0 Delivered to {recipient}" if code == 250 else _reply(code, text)


def _answer(client: smtplib.LMTP, command: str, pipelined: bool) -> tuple[int, bytes]:
    if not pipelined:
        client.send(command)
    return client.getreply()


def _data_lines(raw: bytes) -> bytes:
    """The message as DATA sends it (as smtplib's data() does): dot-stuffed, ending in CRLF . CRLF."""
    stuffed = re.sub(rb"(?m)^\.", b"..", raw)
    return stuffed + (b"" if stuffed.endswith(b"\r\n") else b"\r\n") + b".\r\n"


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
