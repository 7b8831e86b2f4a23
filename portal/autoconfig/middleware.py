"""`autoconfig.<domain>` and `autodiscover.<domain>` of a verified hosted domain as a valid Host, and
the domain itself for the autoconfig documents' well-known paths.

Mail clients fetch their settings from those names (CNAMEs to WEBMAIL_HOST that the domain's owner
publishes; Thunderbird and the autoconfig draft also ask the domain itself under /.well-known/).
ALLOWED_HOSTS cannot list every customer's domain, so for such a name this middleware accepts the Host
for this request only and routes it through portal.autoconfig.urls: nothing else of the platform exists
there. Any other name is left to Django's own ALLOWED_HOSTS check (400). Only names starting with one
of the two labels, or a well-known autoconfig path on a name ALLOWED_HOSTS does not list, cost a
database look-up."""
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from mailcore.domains.hosted import AUTOCONFIG_LABELS, autoconfig_host_domain, hosted_domain

AUTOCONFIG_URLCONF = "portal.autoconfig.urls"
_PREFIXES = tuple(f"{label}." for label in AUTOCONFIG_LABELS)
# What a mail client asks the address's domain itself (its web server, when it points here).
WELL_KNOWN_PATHS = frozenset({"/.well-known/autoconfig/mail/config-v1.1.xml", "/.well-known/mail-v1.xml"})


def _autoconfig_domain(name: str, path: str):
    if name.startswith(_PREFIXES):
        return autoconfig_host_domain(name)
    if path in WELL_KNOWN_PATHS and not validate_host(name, settings.ALLOWED_HOSTS):
        return hosted_domain(name)
    return None


class AutoconfigHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "urlconf", None) is None:  # not a partner's webmail hostname already
            raw_host = request._get_raw_host()
            name, _port = split_domain_port(raw_host)
            domain = _autoconfig_domain(name, request.path_info) if name else None
            if domain is not None:
                request.get_host = lambda: raw_host  # checked just now: a verified domain's name
                request.urlconf = AUTOCONFIG_URLCONF
                request.autoconfig_domain = domain
        return self.get_response(request)


def request_autoconfig_domain(request):
    """The hosted domain whose autoconfig/autodiscover name the request came in on, else None."""
    return getattr(request, "autoconfig_domain", None)
