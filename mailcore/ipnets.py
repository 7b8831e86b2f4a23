"""IP address lists (IPv4, IPv6, CIDR) and the client address behind trusted proxies."""
import ipaddress
from collections.abc import Iterable, Mapping

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_network(entry: str) -> Network:
    """One allow/block list entry: an address or a CIDR. Raises ValueError when invalid."""
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"{entry!r} is not an IP address or CIDR")
    try:
        return ipaddress.ip_network(entry.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{entry!r} is not an IP address or CIDR") from None


def normalise_ip_list(entries: Iterable[str] | None) -> list[str] | None:
    """Validate a list and return it in canonical form (`10.0.0.0/8`, `2001:db8::1/128`...)."""
    if entries is None:
        return None
    return [str(parse_network(entry)) for entry in entries]


def ip_in_list(address: str, entries: Iterable[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in parse_network(entry) for entry in entries if parse_network(entry).version == ip.version)


def client_ip(meta: Mapping[str, str], trusted_proxy_count: int) -> str:
    """REMOTE_ADDR, or with N trusted proxies the address the outermost of them saw.

    Each proxy appends the address it received from, so the client is the N-th entry from the
    right of X-Forwarded-For; anything left of it was supplied by the client and is not trusted.
    """
    remote = meta.get("REMOTE_ADDR", "")
    if trusted_proxy_count <= 0:
        return remote
    forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < trusted_proxy_count:
        return forwarded[0] if forwarded else remote
    return forwarded[-trusted_proxy_count]
