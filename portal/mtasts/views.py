"""The MTA-STS policy file (RFC 8461 section 3.2): plain text, no cookies, no session."""
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_safe

from mailcore.domains.mta_sts import POLICY_CONTENT_TYPE, mta_sts_policy
from portal.mtasts.middleware import request_mta_sts_domain


@require_safe
def policy(request):
    domain = request_mta_sts_domain(request)
    if domain is None:  # the path on any other host
        raise Http404("No MTA-STS policy here.")
    return HttpResponse(mta_sts_policy(domain), content_type=POLICY_CONTENT_TYPE)
