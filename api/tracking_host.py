"""`track.<domain>`, a verified domain's own tracking host, as a valid Host for the tracking links only.

Tracked mail's pixel and click redirects point at the sending domain's own host once its CNAME to
TRACKING_HOST has been seen (mailcore.domains.dnscheck, the "tracking" record). ALLOWED_HOSTS cannot
list those names, so for such a name this middleware accepts the Host for this request only and routes
it through api.tracking_urls: nothing else of the platform exists there. Only names starting with
`track.` cost a database look-up; any other name is left to Django's own ALLOWED_HOSTS check."""
from django.http.request import split_domain_port

from mailcore.domains.hosted import tracking_host_domain
from mailcore.domains.models import TRACKING_LABEL

TRACKING_URLCONF = "api.tracking_urls"


class TrackingHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "urlconf", None) is None:  # not a partner's webmail or autoconfig name already
            raw_host = request._get_raw_host()
            name, _port = split_domain_port(raw_host)
            if name.startswith(f"{TRACKING_LABEL}.") and tracking_host_domain(name) is not None:
                request.get_host = lambda: raw_host  # checked just now: a verified domain's tracking host
                request.urlconf = TRACKING_URLCONF
        return self.get_response(request)
