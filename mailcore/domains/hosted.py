"""Which names this platform hosts: a verified domain by name or by address, the
`autoconfig.<domain>` / `autodiscover.<domain>` names mail clients look up for one (the autoconfig
views, their Host check and the on-demand TLS ask all read them), `track.<domain>`, a domain's own
tracking host once its CNAME has been seen, and `mta-sts.<domain>`, where sending servers fetch
its MTA-STS policy (the policy view, its Host check and the ask)."""
from mailcore.domains.models import TRACKING_LABEL, Domain
from mailcore.domains.mta_sts import MTA_STS_LABEL
from mailcore.domains.names import InvalidHostname, hostname_to_ascii

# The names under a hosted domain that mail clients look up (CNAMEs to WEBMAIL_HOST).
AUTOCONFIG_LABELS = ("autoconfig", "autodiscover")


def domain_name_normalise(name: str) -> str | None:
    """The stored form of a domain name (lower-case ASCII, no trailing dot), or None."""
    try:
        return hostname_to_ascii(name) if isinstance(name, str) and len(name) <= 253 else None
    except InvalidHostname:
        return None


def hosted_domain(name: str) -> Domain | None:
    """The verified domain called `name`, or None."""
    normalised = domain_name_normalise(name)
    if normalised is None:
        return None
    return Domain.objects.filter(name=normalised, status=Domain.Status.VERIFIED).select_related("account").first()


def hosted_domain_of_address(address: str) -> Domain | None:
    local, at, domain = (address or "").strip().rpartition("@")
    return hosted_domain(domain) if at and local else None


def autoconfig_host_domain(host: str) -> Domain | None:
    """For `autoconfig.<domain>` or `autodiscover.<domain>` of a verified domain, that domain."""
    label, dot, rest = (host or "").strip().rstrip(".").lower().partition(".")
    if not dot or label not in AUTOCONFIG_LABELS:
        return None
    return hosted_domain(rest)


def tracking_host_domain(host: str) -> Domain | None:
    """For `track.<domain>` of a verified domain whose CNAME to TRACKING_HOST was seen, that domain."""
    label, dot, rest = (host or "").strip().rstrip(".").lower().partition(".")
    if not dot or label != TRACKING_LABEL:
        return None
    domain = hosted_domain(rest)
    return domain if domain is not None and domain.tracking_host_seen_at else None


def mta_sts_host_domain(host: str) -> Domain | None:
    """For `mta-sts.<domain>` of a verified domain, that domain."""
    label, dot, rest = (host or "").strip().rstrip(".").lower().partition(".")
    if not dot or label != MTA_STS_LABEL:
        return None
    return hosted_domain(rest)
