"""SSRF safety for webhook URLs: resolve the host, refuse unsafe addresses, pin the connection.

The address that passed the check is the one we connect to (the URL's host goes only into the
Host header and TLS SNI), so a DNS answer that changes between check and connect (rebinding)
cannot steer the request elsewhere.
"""
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from mailcore.ipnets import ip_in_list


class UnsafeDestination(Exception):
    """The URL may never be delivered to (refused address): no retries."""


class UnresolvableDestination(Exception):
    """The host does not resolve now; DNS may recover, so the delivery is retried."""


@dataclass(frozen=True)
class Destination:
    host: str  # as in the URL: for the Host header, SNI and certificate checks
    ip: str  # the checked address we connect to
    port: int


def _is_unsafe(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if settings.WEBHOOK_ALLOW_PRIVATE else "a loopback address"
    for unsafe, label in ((ip.is_unspecified, "an unspecified address"), (ip.is_link_local, "a link-local address"),
                          (ip.is_multicast, "a multicast address"), (ip.is_reserved, "a reserved address"),
                          (ip.is_private, "a private address")):
        if unsafe:
            return label
    if not ip.is_global:
        return "a non-public address"
    return None


def check_url_shape(url: str) -> None:
    """What can be checked without DNS: HTTPS and a host."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise UnsafeDestination("the URL must use https")
    if not parts.hostname:
        raise UnsafeDestination("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeDestination("the URL must not carry credentials")


def lookup(hostname: str, port: int) -> list[str]:
    """The host's addresses, from the system's resolver."""
    try:
        infos = socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise UnresolvableDestination(f"{hostname} does not resolve") from None
    return [info[4][0] for info in infos]


def resolve_destination(url: str, allowed_ips: list[str] | None, resolve=lookup) -> Destination:
    """The first address of the URL's host that passes the checks; `resolve` may be a cache of `lookup`."""
    check_url_shape(url)
    parts = urlsplit(url)
    port = parts.port or 443
    reasons = []
    for address in resolve(parts.hostname, port):
        ip = ipaddress.ip_address(address)
        reason = _is_unsafe(ip)
        if reason:
            reasons.append(f"{address} is {reason}")
            continue
        if allowed_ips and not ip_in_list(address, allowed_ips):
            reasons.append(f"{address} is not in the endpoint's allowed_ips")
            continue
        return Destination(parts.hostname, address, port)
    raise UnsafeDestination(f"{parts.hostname} resolves only to refused addresses: {'; '.join(reasons)}")
