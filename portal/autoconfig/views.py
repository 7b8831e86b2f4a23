"""Mail-client autoconfiguration: Thunderbird's config-v1.1.xml (GET) and Outlook's autodiscover
(POST). Both answer only for verified hosted domains; neither uses cookies or sessions.

On a partner's webmail hostname only that partner's domains are described, and DAV is reached at
that hostname; on `autoconfig.<domain>` / `autodiscover.<domain>` (portal.autoconfig.middleware)
and the platform's names, at the domain's partner's hostname or WEBMAIL_HOST."""
from django.http import Http404, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST, require_safe

from mailcore.domains.hosted import hosted_domain_of_address
from mailcore.domains.models import Domain
from webmail.client_settings import ClientSettings, client_settings_for, domain_partner_id
from portal.autoconfig.documents import (
    OUTLOOK_RESPONSE_NS,
    AutodiscoverRequestInvalid,
    autodiscover_error,
    autodiscover_request_parse,
    autodiscover_response,
    thunderbird_config,
)
from portal.autoconfig.middleware import request_autoconfig_domain
from portal.webmail_host import request_brand

XML = "application/xml; charset=utf-8"
AUTODISCOVER_MAX_BYTES = 16 * 1024  # an Outlook request is a few hundred bytes


def _settings_for(request, domain: Domain | None) -> ClientSettings:
    """The domain's client settings as seen from this request's host, or 404."""
    if domain is None:
        raise Http404("No such hosted domain.")
    brand = request_brand(request)
    if brand is not None:
        if domain_partner_id(domain) != brand.partner_id:  # another partner's customers: not on this name
            raise Http404("No such hosted domain.")
        return client_settings_for(domain, web_host=brand.hostname)
    return client_settings_for(domain)


def _xml(body: bytes, *, status: int = 200) -> HttpResponse:
    response = HttpResponse(body, content_type=XML, status=status)
    response["Cache-Control"] = "no-store" if status != 200 else "public, max-age=3600"
    return response


@require_safe
def thunderbird(request):
    """clientConfig for ?emailaddress=, or for the domain of the `autoconfig.<domain>` Host."""
    address = request.GET.get("emailaddress", "")
    domain = hosted_domain_of_address(address) if address else request_autoconfig_domain(request)
    return _xml(thunderbird_config(_settings_for(request, domain)))


@csrf_exempt
@require_POST
def outlook(request):
    """Outlook's POX autodiscover: 400 with an Error 600 for a body that is not an autodiscover
    request (or carries a DTD), 413 past AUTODISCOVER_MAX_BYTES, 404 for a domain we do not host."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > AUTODISCOVER_MAX_BYTES:
        return _xml(autodiscover_error(600, "Request too large"), status=413)
    body = request.read(AUTODISCOVER_MAX_BYTES + 1)
    if len(body) > AUTODISCOVER_MAX_BYTES:
        return _xml(autodiscover_error(600, "Request too large"), status=413)
    try:
        parsed = autodiscover_request_parse(body)
    except AutodiscoverRequestInvalid:
        return _xml(autodiscover_error(600, "Invalid Request"), status=400)
    if parsed.response_schema and parsed.response_schema != OUTLOOK_RESPONSE_NS:
        # ActiveSync (mobilesync) clients: we have no Exchange server; Exchange answers this with 200.
        return _xml(autodiscover_error(601, "Provider is not available for the requested schema"))
    config = _settings_for(request, hosted_domain_of_address(parsed.email_address))
    return _xml(autodiscover_response(config, address=parsed.email_address))

