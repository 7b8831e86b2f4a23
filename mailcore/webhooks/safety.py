"""SSRF safety for webhook (and logo) URLs: the shared address policy (mailcore.netsafety) applied
to a URL: resolve the host, refuse unsafe addresses, pin the connection to the checked one."""
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from mailcore.netsafety import RefusedAddress, UnresolvedHost, public_address, system_lookup


class UnsafeDestination(Exception):
    """The URL may never be delivered to (refused address): no retries."""


class UnresolvableDestination(Exception):
    """The host does not resolve now; DNS may recover, so the delivery is retried."""


@dataclass(frozen=True)
class Destination:
    host: str  # as in the URL: for the Host header, SNI and certificate checks
    ip: str  # the checked address we connect to
    port: int


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
        return system_lookup(hostname, port)
    except UnresolvedHost as error:
        raise UnresolvableDestination(str(error)) from None


def resolve_destination(url: str, allowed_ips: list[str] | None, resolve=lookup) -> Destination:
    """The first address of the URL's host that passes the checks; `resolve` may be a cache of `lookup`."""
    check_url_shape(url)
    parts = urlsplit(url)
    port = parts.port or 443
    try:
        ip = public_address(parts.hostname, port, allow_loopback=settings.WEBHOOK_ALLOW_PRIVATE,
                            allowed_ips=allowed_ips, resolve=resolve)
    except RefusedAddress as error:
        raise UnsafeDestination(str(error)) from None
    return Destination(parts.hostname, ip, port)
