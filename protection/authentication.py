"""Who really sent a stored message, as its owner reads it: the SPF, DKIM, DMARC and ARC results of
our Authentication-Results header (mailcore.store.authresults reads it) and, when they say the
sender is not who the From line claims, one warning in plain words."""
from collections.abc import Iterable
from dataclasses import dataclass
from email.utils import getaddresses

from mailcore.store.authresults import HEADER, AuthenticationResults, ours


@dataclass(frozen=True)
class Authentication:
    """`results` is {spf, dkim, dmarc, arc} (None when the message carries no header of ours);
    `warning` is a sentence for the owner, or "" when there is nothing to warn about."""

    results: dict[str, str] | None
    claimed_domain: str
    warning: str

    @property
    def failed(self) -> bool:
        return bool(self.warning)


def _domain_of(from_header: str) -> str:
    addresses = [address for _, address in getaddresses([from_header]) if "@" in address]
    return addresses[0].rpartition("@")[2].strip().strip(">").lower() if addresses else ""


def _warning(results: AuthenticationResults, domain: str) -> str:
    if not domain:
        return ""
    dmarc, spf, dkim = results.result("dmarc"), results.result("spf"), results.result("dkim")
    if dmarc == "fail":
        return (f"This message claims to be from {domain} but was not sent by {domain}'s servers. "
                "Be careful with its links, attachments and any request for money or passwords.")
    if dmarc in ("none", "policy") and spf == "fail" and dkim != "pass":
        return (f"This message claims to be from {domain} but {domain} does not list the server that sent it. "
                "It may not be from them.")
    return ""


def message_authentication(headers: Iterable[tuple[str, str]]) -> Authentication:
    """Read from a stored message's headers (name, value), in the order the message has them."""
    headers = list(headers)
    results = ours(value for name, value in headers if name.lower() == HEADER.lower())
    from_header = next((value for name, value in headers if name.lower() == "from"), "")
    if results is None:
        return Authentication(None, _domain_of(from_header), "")
    dmarc = results.methods.get("dmarc")
    domain = (dmarc.properties.get("header.from") if dmarc else "") or _domain_of(from_header)
    return Authentication(results.summary(), domain, _warning(results, domain))
