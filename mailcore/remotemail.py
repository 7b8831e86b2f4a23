"""Connections to a connected mailbox's own provider (its IMAP server, its SMTP submission server),
whose host the caller chose: only to a public address checked after DNS and then pinned
(mailcore.netsafety; loopback only with CONNECTED_MAILBOX_ALLOW_LOOPBACK, in tests), with short
timeouts and an optional overall Deadline, and errors in our own words: what the far side said (a
banner, a refusal's text) is never repeated to the caller. Names are resolved through dnspython
(mailcore.dnslookup) within DNS_TIMEOUT_SECONDS: the system's getaddrinfo has no timeout, and no
Deadline can interrupt it. An IMAP literal longer than the caller's cap is never read.
"""
import imaplib
import smtplib
import socket
import ssl
from dataclasses import dataclass

from django.conf import settings
from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from mailcore.dnslookup import lookup
from mailcore.netsafety import Deadline, RefusedAddress, UnresolvedHost, pinned_connection, public_address

SMTP_SECURITY = ("starttls", "tls", "none")


class ProviderError(Exception):
    """The provider could not be used; `field` names the input it concerns, the message is ours."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    security: str  # starttls, tls (implicit) or none
    username: str
    password: str


def _tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class ResponseTooLarge(Exception):
    """The provider began a response longer than the caller accepts; the connection is unusable now."""


def dns_addresses(hostname: str, port: int) -> list[str]:
    """The host's IPv4 addresses, else its IPv6 ones, each query within DNS_TIMEOUT_SECONDS."""
    for rdtype in ("A", "AAAA"):
        if found := lookup(hostname, rdtype).values:
            return found
    raise UnresolvedHost(f"{hostname} does not resolve")


def checked_address(host: str, port: int, *, field: str) -> str:
    """The public address `host` may be reached at, else ProviderError (never saying what it resolved to)."""
    try:
        return public_address(host, port, allow_loopback=settings.CONNECTED_MAILBOX_ALLOW_LOOPBACK,
                              resolve=dns_addresses)
    except (RefusedAddress, UnresolvedHost):
        raise ProviderError(field, f"{host} cannot be used: give the name of a mail server reachable on the "
                                   "public internet") from None


def _open(ip: str, port: int, timeout: float, deadline: Deadline | None, tls_host: str | None) -> socket.socket:
    """A pinned connection, watched by `deadline` from the start; under TLS for `tls_host` when given."""
    sock = pinned_connection(ip, port, timeout)
    if tls_host is None:
        if deadline:
            deadline.watch(lambda: sock)
        return sock
    wrapped = _tls_context().wrap_socket(sock, server_hostname=tls_host, do_handshake_on_connect=False)
    if deadline:
        deadline.watch(lambda: wrapped)
    wrapped.do_handshake()
    return wrapped


class _PinnedIMAP4(imaplib.IMAP4):
    def __init__(self, host: str, ip: str, port: int, tls: bool, timeout: float, deadline: Deadline | None,
                 max_literal: int | None):
        self._pinned_ip, self._tls, self._deadline, self._max_literal = ip, tls, deadline, max_literal
        super().__init__(host, port, timeout=timeout)

    def _create_socket(self, timeout=None):
        return _open(self._pinned_ip, self.port, timeout, self._deadline, self.host if self._tls else None)

    def read(self, size: int) -> bytes:
        """imaplib reads each literal whole into memory: one over the cap is refused before any of it is."""
        if self._max_literal is not None and size > self._max_literal:
            raise ResponseTooLarge(f"a response of {size} bytes")
        return super().read(size)


class PinnedIMAPClient(IMAPClient):
    """IMAPClient connected to the checked address; TLS names and verifies the host."""

    def __init__(self, host: str, ip: str, port: int, *, tls: bool, connect_timeout: float, read_timeout: float,
                 deadline: Deadline | None = None, max_literal: int | None = None):
        from imapclient import SocketTimeout

        self._pinned_ip, self._deadline, self._max_literal = ip, deadline, max_literal
        super().__init__(host, port=port, ssl=tls, timeout=SocketTimeout(connect_timeout, read_timeout))

    def _create_IMAP4(self):
        return _PinnedIMAP4(self.host, self._pinned_ip, self.port, self.ssl, self._timeout.connect, self._deadline,
                            self._max_literal)


def imap_open(host: str, port: int, tls: bool, username: str, password: str, *, connect_timeout: float,
              read_timeout: float, deadline: Deadline | None = None, max_literal: int | None = None) -> IMAPClient:
    """A logged-in connection to the provider's IMAP server, or ProviderError. `max_literal`: the
    longest literal (a message, a part) read from it; a longer one raises ResponseTooLarge."""
    ip = checked_address(host, port, field="imap_host")
    try:
        client = PinnedIMAPClient(host, ip, port, tls=tls, connect_timeout=connect_timeout,
                                  read_timeout=read_timeout, deadline=deadline, max_literal=max_literal)
    except (OSError, imaplib.IMAP4.error, ssl.SSLError, ValueError, ResponseTooLarge):
        raise ProviderError("imap_host", f"no IMAP server answered at {host}:{port}"
                                         f"{' over TLS' if tls else ''}") from None
    try:
        client.login(username, password)
    except LoginError:
        _close(client)
        raise ProviderError("password", f"the IMAP server at {host} refused this username and password") from None
    except Exception:  # noqa: BLE001 - whatever it was, its words stay out of the answer
        _close(client)
        raise ProviderError("imap_host", f"the IMAP server at {host}:{port} stopped answering") from None
    return client


def imap_login_check(host: str, port: int, tls: bool, username: str, password: str, *, deadline: Deadline) -> None:
    timeout = settings.CONNECTED_MAILBOX_CHECK_SECONDS
    _close(imap_open(host, port, tls, username, password, connect_timeout=timeout, read_timeout=timeout,
                     deadline=deadline))


def _close(client: IMAPClient) -> None:
    try:
        client.logout()
    except Exception:  # noqa: BLE001 - it is being dropped either way
        try:
            client.shutdown()
        except Exception:  # noqa: BLE001
            pass


class _PinnedSMTP(smtplib.SMTP):
    def __init__(self, ip: str, timeout: float, deadline: Deadline | None):
        self._pinned_ip, self._deadline = ip, deadline
        super().__init__(local_hostname=settings.MAIL_HOST, timeout=timeout)

    def _get_socket(self, host, port, timeout):
        sock = _open(self._pinned_ip, port, timeout, None, None)
        if self._deadline:
            self._deadline.watch(lambda: self.sock or sock)  # after STARTTLS, the TLS socket
        return sock


class _PinnedSMTPSSL(smtplib.SMTP_SSL):
    def __init__(self, ip: str, timeout: float, deadline: Deadline | None):
        self._pinned_ip, self._deadline = ip, deadline
        super().__init__(local_hostname=settings.MAIL_HOST, timeout=timeout, context=_tls_context())

    def _get_socket(self, host, port, timeout):
        return _open(self._pinned_ip, port, timeout, self._deadline, self._host)


def smtp_open(server: SmtpServer, *, timeout: float, deadline: Deadline | None = None) -> smtplib.SMTP:
    """A logged-in session on the provider's submission server, or ProviderError."""
    ip = checked_address(server.host, server.port, field="smtp_host")
    client_class = _PinnedSMTPSSL if server.security == "tls" else _PinnedSMTP
    client = client_class(ip, timeout, deadline)
    client._host = server.host  # the name TLS verifies (smtplib takes it from connect's host otherwise)
    try:
        code, _ = client.connect(server.host, server.port)
        if code != 220:
            raise smtplib.SMTPConnectError(code, "")
        client.ehlo()
        if server.security == "starttls":
            client.starttls(context=_tls_context())
            client.ehlo()
    except (OSError, smtplib.SMTPException, ssl.SSLError, ValueError):
        client.close()
        raise ProviderError("smtp_host", f"no SMTP submission server answered at {server.host}:{server.port}"
                                         f"{'' if server.security == 'none' else ' over TLS'}") from None
    if server.username:
        # One mechanism only: smtplib would try the next after a refusal, on a connection many
        # servers close after a failed AUTH (a refused login would read as a server gone away).
        advertised = client.esmtp_features.get("auth", "").upper().split()
        chosen = next((mechanism for mechanism in ("PLAIN", "LOGIN", "CRAM-MD5") if mechanism in advertised), None)
        if chosen:
            client.esmtp_features["auth"] = chosen
        try:
            client.login(server.username, server.password)
        except (smtplib.SMTPAuthenticationError, smtplib.SMTPNotSupportedError):
            client.close()
            raise ProviderError("smtp_password", f"the SMTP server at {server.host} refused this username and "
                                                 "password") from None
        except (OSError, smtplib.SMTPException, ValueError):
            client.close()
            raise ProviderError("smtp_host", f"the SMTP server at {server.host}:{server.port} stopped "
                                             "answering") from None
    return client


def smtp_login_check(server: SmtpServer, *, deadline: Deadline) -> None:
    client = smtp_open(server, timeout=settings.CONNECTED_MAILBOX_CHECK_SECONDS, deadline=deadline)
    try:
        client.quit()
    except (OSError, smtplib.SMTPException):
        client.close()
