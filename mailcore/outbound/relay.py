"""Hand a message to the next hop, for forwarding and for sending alike.

With SMTP_URL set, everything goes to that relay (STARTTLS, implicit TLS and AUTH as the URL
says); hosted recipients come back to our listener through the MTA. Without it (embedded mode),
recipients on hosted domains are delivered by the `local` delivery the caller hands in (inbound's,
which sits above this module) and the rest are written to the local outbox: one file per message, DATA_DIR/outbox/<UTC timestamp>-<uuid>.eml, holding
the message bytes unchanged after one `X-Outbox-Envelope-From` header and one
`X-Outbox-Envelope-To` header per recipient, so any mail client opens it. A Relay given a
connected mailbox's own submission server hands everything to that server instead.
"""
import os
import select
import smtplib
import ssl
import uuid
from dataclasses import dataclass
from functools import lru_cache
from datetime import UTC, datetime
from pathlib import Path
from typing import Callable, Literal

from django.conf import settings

from mailcore.netsafety import Deadline
from mailcore.remotemail import ProviderError, SmtpServer, smtp_open
from mailcore.smtpurl import parse_smtp_url

RELAY_TIMEOUT_SECONDS = 60
ACCEPTED = {"relayed", "delivered", "outbox"}

LocalDelivery = Callable[[bytes, str, str], str | None]
"""(raw, recipient, envelope_from) -> the SMTP reply of a delivery here, or None when the recipient's
domain is not hosted here."""


@dataclass(frozen=True)
class Outcome:
    recipient: str
    status: Literal["relayed", "delivered", "outbox", "deferred", "refused"]
    reply: str  # the SMTP reply that decided it

    @property
    def accepted(self) -> bool:
        return self.status in ACCEPTED


def _check_address(address: str) -> str:
    if any(char in address for char in "\r\n<>") or any(char.isspace() for char in address):
        raise ValueError(f"invalid envelope address {address!r}")
    return address


def relay(envelope_from: str, recipients: list[str], raw: bytes, *, local: LocalDelivery | None = None
          ) -> list[Outcome]:
    """One outcome per recipient, in order. Never raises for the network: a failure is `deferred`.
    Without `local`, embedded mode keeps every recipient in the outbox."""
    with Relay(local=local) as session:
        return session.send(envelope_from, recipients, raw)


class Relay:
    """Hands many messages to the next hop over one SMTP connection (SMTP_URL), opened at the first
    message and opened again when the relay dropped it: a batch pays one TCP and TLS handshake and
    one login, not one per message. A finished transaction leaves the session ready for the next
    MAIL (RFC 5321 4.1.4; smtplib resets after a failed one), so no RSET round trip is spent between
    messages: a connection the relay closed or spoke on unasked (a 421) is noticed by a poll that
    waits for nothing. Use it as a context manager."""

    def __init__(self, *, local: LocalDelivery | None = None, server: "SubmissionServer | None" = None,
                 deadline: Deadline | None = None):
        """`server`: hand everything to that server instead of SMTP_URL (a connected mailbox's own
        provider); otherwise SMTP_URL's relay, or local delivery and the outbox without one.
        `deadline`: ends a provider's session once it passed, whatever the provider does."""
        self.local = local
        self.server = server
        self.deadline = deadline
        self._client: smtplib.SMTP | None = None
        self._used = False  # a transaction ran on the open connection: check it is still open before the next
        self._down: str | None = None  # the reply for every message once a connection could not be had

    def __enter__(self) -> "Relay":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        _quit(self._client)
        self._client, self._used = None, False

    def send(self, envelope_from: str, recipients: list[str], raw: bytes) -> list[Outcome]:
        """As relay(): one outcome per recipient, in order; never raises for the network."""
        _check_address(envelope_from)  # "" is the null sender of bounces
        for recipient in recipients:
            _check_address(recipient)
        if not recipients:
            return []
        if self.server is not None or settings.SMTP_URL:
            return self._via_smtp(envelope_from, recipients, raw)
        return _locally(envelope_from, recipients, raw, self.local)

    def _next_hop(self) -> "SubmissionServer":
        if self.server is not None:
            return self.server
        return SubmissionServer.from_url(parse_smtp_url(settings.SMTP_URL))

    def _drop(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client, self._used = None, False

    def _ready(self, url: "SubmissionServer") -> smtplib.SMTP:
        """The open connection, or a new one when there is none or the relay dropped it."""
        if self._client is not None and self._used and _closed_or_talking(self._client):
            self._drop()
        if self._client is None:
            self._client = url.connect(deadline=self.deadline)
        return self._client

    def _via_smtp(self, envelope_from: str, recipients: list[str], raw: bytes) -> list[Outcome]:
        url = self._next_hop()
        for last_try in (False, True):
            reused = self._client is not None
            if self._down is None:
                try:
                    client = self._ready(url)
                except (OSError, smtplib.SMTPException, ProviderError) as error:
                    self._down = _connect_failure(url, error)
            if self._down is not None:  # no connection to be had: the rest of the batch waits for its retry too
                return [Outcome(recipient, "deferred", self._down) for recipient in recipients]
            try:
                refused = self._transaction(client, envelope_from, recipients, raw)
            except _ClosedBeforeMail:
                if reused and not last_try:
                    self._drop()  # the relay hung up between messages: nothing was handed over
                    continue
                self._drop()
                reply = f"451 4.4.1 {url.label} {url.host}:{url.port} unavailable (SMTPServerDisconnected)"
                return [Outcome(recipient, "deferred", reply) for recipient in recipients]
            except smtplib.SMTPRecipientsRefused as error:
                refused = error.recipients
            except smtplib.SMTPSenderRefused as error:
                if error.smtp_code == 421 and reused and not last_try:
                    self._drop()  # closing this connection (too many messages on it?): nothing was handed over
                    continue
                return self._refused_all(recipients, error)
            except smtplib.SMTPResponseException as error:  # data refused
                return self._refused_all(recipients, error)
            except (OSError, smtplib.SMTPException) as error:  # dropped mid-transaction: the next message reconnects
                self._drop()
                reply = f"451 4.4.1 {url.label} {url.host}:{url.port} unavailable ({error.__class__.__name__})"
                return [Outcome(recipient, "deferred", reply) for recipient in recipients]
            self._used = True
            return [
                _outcome(recipient, *refused[recipient]) if recipient in refused
                else Outcome(recipient, "relayed", "250 2.0.0 Relayed")
                for recipient in recipients
            ]

    def _refused_all(self, recipients: list[str], error: smtplib.SMTPResponseException) -> list[Outcome]:
        """smtplib reset the transaction (or closed the connection on a 421) before raising."""
        self._used = True
        if error.smtp_code == 421 or self._client.sock is None:
            self._drop()
        return [_outcome(recipient, error.smtp_code, error.smtp_error) for recipient in recipients]

    @staticmethod
    def _transaction(client: smtplib.SMTP, envelope_from: str, recipients: list[str], raw: bytes) -> dict:
        """smtplib's sendmail, except that a connection found closed at MAIL (before the relay took
        anything) raises _ClosedBeforeMail, so the message can go on a new connection at once."""
        try:
            client.ehlo_or_helo_if_needed()
            options = [f"SIZE={len(raw)}"] if client.has_extn("size") else []
            if any(byte > 127 for byte in raw) and client.has_extn("8bitmime"):
                options.append("BODY=8BITMIME")
            if not (envelope_from + "".join(recipients)).isascii() and client.has_extn("smtputf8"):
                options.append("SMTPUTF8")
            code, reply = client.mail(envelope_from, options)
        except smtplib.SMTPServerDisconnected as error:
            raise _ClosedBeforeMail from error
        if code != 250:
            _end_transaction(client, code)
            raise smtplib.SMTPSenderRefused(code, reply, envelope_from)
        refused = {}
        for recipient in recipients:
            code, reply = client.rcpt(recipient)
            if code not in (250, 251):
                refused[recipient] = (code, reply)
            if code == 421:
                client.close()
                raise smtplib.SMTPRecipientsRefused(refused)
        if len(refused) == len(recipients):
            _end_transaction(client, 0)
            raise smtplib.SMTPRecipientsRefused(refused)
        code, reply = client.data(raw)
        if code != 250:
            _end_transaction(client, code)
            raise smtplib.SMTPDataError(code, reply)
        return refused


class _ClosedBeforeMail(Exception):
    """The relay closed the connection before answering MAIL: nothing of the message was handed over."""


def _end_transaction(client: smtplib.SMTP, code: int) -> None:
    """After a refusal: a 421 closes the session; otherwise RSET (its failure only closes it too)."""
    if code == 421:
        client.close()
        return
    try:
        client.rset()
    except smtplib.SMTPServerDisconnected:
        pass


def _closed_or_talking(client: smtplib.SMTP) -> bool:
    """Between transactions the relay says nothing: anything to read (its FIN, a 421 before closing,
    TLS data pending) means the connection is no longer fit for the next message."""
    sock = client.sock
    if sock is None:
        return True
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        readable, _, failed = select.select([sock], [], [sock], 0)
    except (OSError, ValueError):
        return True
    return bool(readable or failed)


def _reply(code: int, text: bytes | str) -> str:
    return f"{code} {text.decode('utf-8', errors='replace') if isinstance(text, bytes) else text}"


def _outcome(recipient: str, code: int, text: bytes | str, accepted_as: str = "relayed") -> Outcome:
    status = accepted_as if code < 400 else ("deferred" if code < 500 else "refused")
    return Outcome(recipient, status, _reply(code, text))


@lru_cache(maxsize=4)
def _tls_context(ca_bundle: str) -> ssl.SSLContext:
    """Built once: loading the system's CA bundle costs ~25 ms, more than the SMTP exchange."""
    context = ssl.create_default_context()
    if ca_bundle:  # a private relay's CA, besides the system's
        context.load_verify_locations(cafile=ca_bundle)
    return context


def _connect_failure(url: "SubmissionServer", error: Exception) -> str:
    """In our words: what a connected mailbox's provider said on connecting never reaches its owner."""
    if isinstance(error, ProviderError):
        if error.field == "smtp_password":
            return f"451 4.7.0 {url.label} {url.host}:{url.port} refused the mailbox's login (SMTPAuthenticationError)"
        return f"451 4.4.1 {url.label} {url.host}:{url.port} unavailable (no SMTP server answered)"
    if isinstance(error, (smtplib.SMTPAuthenticationError, smtplib.SMTPNotSupportedError)):
        # Our relay settings are wrong: hold the mail for a retry after the fix, never bounce it.
        return f"451 4.7.0 {url.label} {url.host}:{url.port} refused our login or TLS ({error.__class__.__name__})"
    return f"451 4.4.1 {url.label} {url.host}:{url.port} unavailable ({error.__class__.__name__})"


@dataclass(frozen=True)
class SubmissionServer:
    """The next hop: SMTP_URL's relay, or a connected mailbox's own provider (pinned to a checked
    public address at every connection, mailcore.remotemail)."""

    label: str
    host: str
    port: int
    provider: SmtpServer | None = None
    relay: object = None  # SMTP_URL parsed (mailcore.smtpurl.SmtpRelay)

    @classmethod
    def from_url(cls, url) -> "SubmissionServer":
        return cls("Relay", url.host, url.port, relay=url)

    @classmethod
    def of_provider(cls, server: SmtpServer) -> "SubmissionServer":
        return cls("Submission server", server.host, server.port, provider=server)

    def connect(self, timeout: float = RELAY_TIMEOUT_SECONDS, deadline: Deadline | None = None) -> smtplib.SMTP:
        """`deadline` bounds a provider's whole session (our own relay is trusted with `timeout` per step)."""
        if self.provider is not None:
            return smtp_open(self.provider, timeout=timeout, deadline=deadline)
        return _connect(self.relay, timeout)


def _connect(url, timeout: float = RELAY_TIMEOUT_SECONDS) -> smtplib.SMTP:
    """A connection to the relay, greeted, on TLS and logged in as the URL says; `timeout` bounds
    each network step."""
    context = _tls_context(settings.SMTP_CA_BUNDLE) if url.implicit_tls or url.starttls else None
    if url.implicit_tls:
        client = smtplib.SMTP_SSL(url.host, url.port, timeout=timeout, context=context)
    else:
        client = smtplib.SMTP(url.host, url.port, timeout=timeout)
    try:
        client.ehlo()
        if url.starttls:
            client.starttls(context=context)
            client.ehlo()
        if url.username:
            client.login(url.username, url.password)
    except BaseException:
        _quit(client)
        raise
    return client


def relay_reachable(timeout: float) -> None:
    """Connect to SMTP_URL as a send would (TLS and login included) and leave; raises when it cannot,
    or when a step takes longer than `timeout` (the readiness check, which must answer quickly)."""
    _quit(_connect(parse_smtp_url(settings.SMTP_URL), timeout))


def _quit(client: smtplib.SMTP | None) -> None:
    """Once the relay has answered DATA the message is its; a failing QUIT changes nothing."""
    if client is None:
        return
    try:
        client.quit()
    except (OSError, smtplib.SMTPException):
        client.close()


def _locally(envelope_from: str, recipients: list[str], raw: bytes, local: LocalDelivery | None) -> list[Outcome]:
    outcomes: dict[str, Outcome] = {}
    remote = []
    for recipient in recipients:
        reply = local(raw, recipient, envelope_from) if local else None
        if reply is None:
            remote.append(recipient)
        else:
            outcomes[recipient] = _outcome(recipient, int(reply[:3]), reply[4:], accepted_as="delivered")
    if remote:
        path = outbox_write(envelope_from, remote, raw)
        for recipient in remote:
            outcomes[recipient] = Outcome(recipient, "outbox", f"250 2.0.0 Kept in the local outbox as {path.name}")
    return [outcomes[recipient] for recipient in recipients]


def outbox_write(envelope_from: str, recipients: list[str], raw: bytes) -> Path:
    """Write atomically (temporary name, then rename) so a reader never sees half a message."""
    folder = Path(settings.DATA_DIR) / "outbox"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    path = folder / f"{stamp}-{uuid.uuid4().hex}.eml"
    newline = b"\r\n" if b"\r\n" in raw[:4096] or not raw else b"\n"
    envelope = [f"X-Outbox-Envelope-From: <{envelope_from}>"]
    envelope += [f"X-Outbox-Envelope-To: <{recipient}>" for recipient in recipients]
    header = newline.join(line.encode("utf-8") for line in envelope) + newline
    temporary = path.with_suffix(".tmp")
    with open(temporary, "wb") as handle:
        handle.write(header + raw)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path


def reply_status(reply: str) -> str:
    """The enhanced status code of an SMTP reply ("550 5.1.1 ..." -> "5.1.1"), else its class ("5.0.0")."""
    code, _, rest = reply.partition(" ")
    status = rest.split(" ", 1)[0]
    parts = status.split(".")
    if len(parts) == 3 and all(part.isdigit() for part in parts) and status[:1] == code[:1]:
        return status
    return f"{code[:1]}.0.0" if code[:1].isdigit() else "5.0.0"
