"""DNS look-ups through dnspython with the nameservers in settings; failures come back as typed
results with a reason, never as exceptions leaking into callers."""
from dataclasses import dataclass

import dns.exception
import dns.resolver
from django.conf import settings


@dataclass(frozen=True)
class Answer:
    values: list[str]
    error: str | None = None  # why there is no answer: "no record", "timeout", ...

    @property
    def ok(self) -> bool:
        return self.error is None


def resolver() -> dns.resolver.Resolver:
    if not settings.DNS_NAMESERVERS:
        result = dns.resolver.Resolver()
    else:
        result = dns.resolver.Resolver(configure=False)
        host, _, port = settings.DNS_NAMESERVERS[0].partition(":")
        result.nameservers = [entry.partition(":")[0] for entry in settings.DNS_NAMESERVERS]
        result.port = int(port or 53)
    result.lifetime = settings.DNS_TIMEOUT_SECONDS
    return result


def lookup(name: str, rdtype: str) -> Answer:
    try:
        answer = resolver().resolve(name, rdtype, raise_on_no_answer=False)
    except dns.resolver.NXDOMAIN:
        return Answer([], "the name does not exist")
    except dns.resolver.NoNameservers:
        return Answer([], "no nameserver answered")
    except dns.exception.Timeout:
        return Answer([], "the DNS query timed out")
    except dns.exception.DNSException as exc:
        return Answer([], f"DNS error: {exc.__class__.__name__}")
    if answer.rrset is None:
        return Answer([], f"no {rdtype} record")
    if rdtype == "TXT":
        return Answer([b"".join(record.strings).decode("utf-8", errors="replace") for record in answer])
    return Answer([record.to_text() for record in answer])


def dkim_dnsfunc(name: bytes, timeout: int = 5) -> bytes | None:
    """dkimpy's DNS hook: the TXT value for a DKIM selector, through our resolver."""
    found = lookup(name.decode().rstrip("."), "TXT")
    return found.values[0].encode() if found.values else None
