"""`mta-sts.<domain>` as a valid Host for a verified hosted domain, routed to its policy file only.

Sending servers fetch https://mta-sts.<domain>/.well-known/mta-sts.txt (RFC 8461); partners point
that name at WEBMAIL_HOST with a CNAME. ALLOWED_HOSTS cannot list every customer's domain, so for a
verified domain's name this middleware accepts the Host for this request only and routes it through
portal.mtasts.urls. Any other `mta-sts.` name (unknown or unverified domain) is answered 404 here:
a policy host that has no policy, never the platform's pages. Other names are left alone."""
from django.http import HttpResponseNotFound
from django.http.request import split_domain_port

from mailcore.domains.hosted import mta_sts_host_domain
from mailcore.domains.mta_sts import MTA_STS_LABEL

MTA_STS_URLCONF = "portal.mtasts.urls"


class MtaStsHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "urlconf", None) is None:  # not a partner's webmail hostname already
            raw_host = request._get_raw_host()
            name, _port = split_domain_port(raw_host)
            if name.startswith(f"{MTA_STS_LABEL}."):
                domain = mta_sts_host_domain(name)
                if domain is None:
                    return HttpResponseNotFound("No MTA-STS policy for this name.\n", content_type="text/plain")
                request.get_host = lambda: raw_host  # checked just now: a verified domain's policy host
                request.urlconf = MTA_STS_URLCONF
                request.mta_sts_domain = domain
        return self.get_response(request)


def request_mta_sts_domain(request):
    """The verified domain whose policy host the request came in on, else None."""
    return getattr(request, "mta_sts_domain", None)
