"""Which domain's key signs a message we originate, so DKIM's d= is the From domain and DMARC's
alignment holds: the platform's own sending domain (SYSTEM_MAIL_DOMAIN) or a verified hosted
domain. Any other From cannot be signed aligned: system mail is sent From the platform's address
instead, and mail Dovecot redirects is signed for the platform's domain (not aligned, but signed)."""
from email.utils import getaddresses

from django.conf import settings

from mailcore.domains.hosted import hosted_domain


def address_domain(address: str) -> str:
    """The domain of an addr-spec, lower-case ("" without one)."""
    local, at, domain = (address or "").strip().rpartition("@")
    return domain.strip().rstrip(".").lower() if at and local else ""


def header_address(value: str) -> str:
    """The addr-spec of a header field holding one address (From), "" when there is none."""
    found = [address for _, address in getaddresses([value or ""]) if "@" in address]
    return found[0] if len(found) == 1 else ""


def signing_domain(domain: str) -> str | None:
    """`domain` when we may sign for it (ours, or verified and hosted here), else None."""
    domain = (domain or "").lower()
    if not domain:
        return None
    if domain == settings.SYSTEM_MAIL_DOMAIN:
        return domain
    return domain if hosted_domain(domain) is not None else None


def system_address() -> str:
    """The address system mail comes from: DEFAULT_FROM_EMAIL's when we may sign for its domain,
    else no-reply@SYSTEM_MAIL_DOMAIN."""
    address = header_address(settings.DEFAULT_FROM_EMAIL)
    if signing_domain(address_domain(address)):
        return address
    return f"no-reply@{settings.SYSTEM_MAIL_DOMAIN}"
