"""The brand assets a partner's webmail hostname serves: its stylesheet (rendered from the brand's
colour fields) and its logo (the re-encoded image, with its real type and nosniff). Their URLs
carry the brand's version, so they are cached for a year; an old version redirects to the current."""
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from webmail.branding import brand_for_hostname, brand_logo, brand_stylesheet
from portal.webmail_host import request_brand

CACHE_FOREVER = "public, max-age=31536000, immutable"


def _current(request, version: str, asset: str):
    host_brand = request_brand(request)
    if host_brand is None:
        raise Http404("No brand here.")
    if version != host_brand.version:
        return host_brand, redirect(f"/brand/{host_brand.version}/{asset}")
    return host_brand, None


@require_GET
def stylesheet(request, version: str):
    host_brand, moved = _current(request, version, "style.css")
    if moved:
        return moved
    response = HttpResponse(brand_stylesheet(brand_for_hostname(partner_id=host_brand.partner_id)),
                            content_type="text/css; charset=utf-8")
    response["Cache-Control"] = CACHE_FOREVER
    return response


@require_GET
def logo(request, version: str):
    host_brand, moved = _current(request, version, "logo")
    if moved:
        return moved
    found = brand_logo(partner_id=host_brand.partner_id)
    if found is None:
        raise Http404("No logo.")
    data, content_type = found
    response = HttpResponse(data, content_type=content_type)
    response["Cache-Control"] = CACHE_FOREVER
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Content-Disposition"] = 'inline; filename="logo"'
    return response


@require_GET
def platform_path(request, rest: str = ""):
    """/webmail/... on a partner's hostname (a link written for the platform's host): the same page at /..."""
    query = request.META.get("QUERY_STRING", "")
    path = "/" + rest.lstrip("/\\")  # never "//elsewhere": that would leave the host
    return redirect(path + (f"?{query}" if query else ""))
