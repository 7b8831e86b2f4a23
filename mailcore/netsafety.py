"""Which network addresses the platform connects to on a caller's behalf (webhook URLs, logo URLs,
connected mailboxes' IMAP and SMTP servers): public ones only, checked after DNS and then pinned.

The address that passed the check is the one connected to (the caller's host name goes only into
TLS SNI, certificate checks and the Host header), so a DNS answer that changes between check and
connect (rebinding) cannot steer the connection elsewhere. A refusal never says what a name
resolved to: an internal name's addresses stay internal.
"""
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable

from mailcore.ipnets import ip_in_list

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedAddress(Exception):
    """The host may never be connected to: only refused addresses (or none in the allowed list)."""


class UnresolvedHost(Exception):
    """The host does not resolve now (DNS may recover)."""


def address_refusal(ip: IpAddress, *, allow_loopback: bool) -> str | None:
    """Why this address is refused ("a private address"...), or None when it is public."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if allow_loopback else "a loopback address"
    for unsafe, label in ((ip.is_unspecified, "an unspecified address"), (ip.is_link_local, "a link-local address"),
                          (ip.is_multicast, "a multicast address"), (ip.is_reserved, "a reserved address"),
                          (ip.is_private, "a private address")):
        if unsafe:
            return label
    if not ip.is_global:
        return "a non-public address"
    return None


def system_lookup(hostname: str, port: int) -> list[str]:
    """The host's addresses, from the system's resolver."""
    try:
        infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise UnresolvedHost(f"{hostname} does not resolve") from None
    return [info[4][0] for info in infos]


def _literal(hostname: str) -> IpAddress | None:
    try:
        return ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        return None


def public_address(hostname: str, port: int, *, allow_loopback: bool, allowed_ips: Iterable[str] | None = None,
                   resolve: Callable[[str, int], list[str]] = system_lookup) -> str:
    """The first address of `hostname` that may be connected to. A literal address the caller wrote
    is refused with its kind; a name only with "does not resolve to a public address", whatever it
    resolved to."""
    literal = _literal(hostname)
    if literal is not None:
        if reason := address_refusal(literal, allow_loopback=allow_loopback):
            raise RefusedAddress(f"{literal} is {reason}")
        if allowed_ips and not ip_in_list(str(literal), allowed_ips):
            raise RefusedAddress(f"{literal} is not in the endpoint's allowed_ips")
        return str(literal)
    outside_list = False
    for address in resolve(hostname, port):
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            continue
        if address_refusal(ip, allow_loopback=allow_loopback):
            continue
        if allowed_ips and not ip_in_list(str(ip), allowed_ips):
            outside_list = True
            continue
        return str(ip)
    if outside_list:
        raise RefusedAddress(f"{hostname} resolves to no address in the endpoint's allowed_ips")
    raise RefusedAddress(f"{hostname} does not resolve to a public address")


def pinned_connection(ip: str, port: int, timeout: float) -> socket.socket:
    """A TCP connection to the checked address itself (never the name again)."""
    return socket.create_connection((ip, port), timeout=timeout)


class Deadline:
    """Ends every connection registered with it once `seconds` have passed, whatever the far side
    does: a silent server or one that drips a byte at a time cannot hold the caller longer. Use it
    as a context manager; `expired` says whether it struck."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._sockets: list[Callable[[], socket.socket | None]] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._strike)
        self._timer.daemon = True

    def __enter__(self) -> "Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._timer.cancel()

    def watch(self, current_socket: Callable[[], socket.socket | None]) -> None:
        """`current_socket` gives the connection's socket as it is now (TLS may have replaced it)."""
        with self._lock:
            self._sockets.append(current_socket)
            expired = self.expired
        if expired:
            _shut(current_socket())

    def _strike(self) -> None:
        with self._lock:
            self.expired = True
            watched = list(self._sockets)
        for current_socket in watched:
            _shut(current_socket())


def _shut(sock: socket.socket | None) -> None:
    """Wake a read blocked on `sock` in another thread (it sees the end of the stream)."""
    if sock is None:
        return
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's, also under TLS
    except (OSError, ValueError):
        pass
