"""Endpoints for the platform's own infrastructure, not for customers: plain Django views, so they
are not in the OpenAPI schema. The reverse proxy keeps /internal/ from the internet (Caddyfile)."""
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from webmail.hostnames import tls_allowed


@require_GET
def tls_allowed_view(request):
    """Caddy's on-demand TLS `ask`: 200 when a certificate may be issued for ?domain=, else 404.
    Exact match of the normalised name against verified partner webmail hostnames and the
    platform's own names; no DNS look-up; cached; anything unexpected answers 404."""
    domain = request.GET.get("domain", "")
    if tls_allowed(domain):
        return JsonResponse({"domain": domain, "allowed": True})
    refused = JsonResponse({"detail": "No certificate for this name."}, status=404)
    refused._has_been_logged = True  # an answer, not an error: scanners' names would flood the log
    return refused
