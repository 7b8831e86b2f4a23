"""`autoconfig.<domain>` and `autodiscover.<domain>` of a verified hosted domain as a valid Host.

Mail clients fetch their settings from those names (CNAMEs to WEBMAIL_HOST that the domain's owner
publishes). ALLOWED_HOSTS cannot list every customer's domain, so for such a name this middleware
accepts the Host for this request only and routes it through portal.autoconfig.urls: nothing else
of the platform exists there. Any other name is left to Django's own ALLOWED_HOSTS check (400).
Only names starting with one of the two labels cost a database look-up."""
from django.http.request import split_domain_port

from mailcore.domains.hosted import AUTOCONFIG_LABELS, autoconfig_host_domain

AUTOCONFIG_URLCONF = "portal.autoconfig.urls"
_PREFIXES = tuple(f"{label}." for label in AUTOCONFIG_LABELS)


class AutoconfigHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "urlconf", None) is None:  # not a partner's webmail hostname already
            raw_host = request._get_raw_host()
            name, _port = split_domain_port(raw_host)
            if name.startswith(_PREFIXES):
                domain = autoconfig_host_domain(name)
                if domain is not None:
                    request.get_host = lambda: raw_host  # checked just now: a verified domain's name
                    request.urlconf = AUTOCONFIG_URLCONF
                    request.autoconfig_domain = domain
        return self.get_response(request)


def request_autoconfig_domain(request):
    """The hosted domain whose autoconfig/autodiscover name the request came in on, else None."""
    return getattr(request, "autoconfig_domain", None)
