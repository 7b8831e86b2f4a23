"""The webmail on a partner's own hostname.

`WebmailHostMiddleware` runs first. For a request whose Host is a partner's *verified* webmail
hostname it (1) accepts that Host although ALLOWED_HOSTS cannot list such names (Django's
`get_host()` is answered for this request only, with the name that was just checked), (2) routes
the request through `portal.webmail.host_urls`, which serves the webmail at `/`, and (3) puts the
partner's brand on the request (`request.webmail_brand`). Every other request is left exactly as
it was, so an unverified or unknown name still meets Django's own ALLOWED_HOSTS check (400).
It sits at portal's root because the autoconfig realm reads the brand too (which partner's domains
a request on that hostname may see).

The hostname lookup never queries DNS and, between changes, not the database either
(webmail.hostnames); when it cannot answer, the host is treated as unknown (fail closed).
"""
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.http.request import split_domain_port

from webmail.branding import brand_for_hostname, brand_version
from webmail.hostnames import hostname_partner_id, platform_names

HOST_URLCONF = "portal.webmail.host_urls"


@dataclass(frozen=True)
class HostBrand:
    """What a partner's hostname shows: read once per request by the middleware."""

    partner_id: int
    hostname: str
    brand_name: str  # as the partner set it; may be empty
    version: str
    has_logo: bool

    @property
    def display_name(self) -> str:
        return self.brand_name or "Webmail"

    @property
    def stylesheet_url(self) -> str:
        return f"/brand/{self.version}/style.css"

    @property
    def logo_url(self) -> str | None:
        return f"/brand/{self.version}/logo" if self.has_logo else None


@lru_cache(maxsize=8)
def _never_partner_hosts(allowed_hosts: tuple[str, ...], platform: frozenset[str]) -> frozenset[str]:
    """Names that can never be a partner's hostname: the exact ALLOWED_HOSTS and the platform's own."""
    exact = {name.strip().lower() for name in allowed_hosts if name and name != "*" and not name.startswith(".")}
    return frozenset(exact | platform)


def _partner_of(domain: str) -> int | None:
    if domain in _never_partner_hosts(tuple(settings.ALLOWED_HOSTS), platform_names()):
        return None  # the platform's own hosts: no lookup at all
    return hostname_partner_id(domain)


class WebmailHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raw_host = request._get_raw_host()
        domain, _port = split_domain_port(raw_host)
        partner_id = _partner_of(domain) if domain else None
        if partner_id is not None:
            request.get_host = lambda: raw_host  # checked just now: a verified hostname (see the docstring)
            request.urlconf = HOST_URLCONF
            brand = brand_for_hostname(partner_id=partner_id)
            request.webmail_brand = HostBrand(partner_id=partner_id, hostname=domain,
                                              brand_name=brand.brand_name if brand else "",
                                              version=brand_version(brand),
                                              has_logo=bool(brand and brand.logo_content_type))
        return self.get_response(request)


def request_brand(request) -> HostBrand | None:
    """The partner's brand when the request came in on its webmail hostname, else None."""
    return getattr(request, "webmail_brand", None)


def is_platform_host(domain: str) -> bool:
    """Whether `domain` (no port) is one of the platform's own names: an exact ALLOWED_HOSTS entry,
    WEBMAIL_HOST or PUBLIC_BASE_URL's host."""
    return domain.lower() in _never_partner_hosts(tuple(settings.ALLOWED_HOSTS), platform_names())


def request_partner_id(request) -> int | None:
    """The partner whose hostname the request came in on (only its clients' mailboxes sign in there)."""
    host_brand = request_brand(request)
    return host_brand.partner_id if host_brand is not None else None


def brand(request) -> dict:
    """Template context processor: on a partner's hostname, its brand (name, logo and stylesheet
    URLs, which replace the platform's name everywhere); nothing elsewhere."""
    host_brand = request_brand(request)
    if host_brand is None:
        return {}
    return {"brand_name": host_brand.display_name, "brand_name_set": bool(host_brand.brand_name),
            "brand_logo_url": host_brand.logo_url, "brand_stylesheet_url": host_brand.stylesheet_url,
            "webmail_brand": host_brand}
