"""Who may open the partner pages: signed in, with a hosting partner account in trial or active
(the hosting API's rule); buying a slot pool is open to an expired partner too, as that is how an
ended trial carries on. Everyone else sees the page that explains how to become a partner, or where
their application stands (pending, declined, expired or suspended)."""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from mailcore.partners.models import HostingPartner

BECOME_PARTNER_TEMPLATE = "portal/become_partner.html"


def become_partner_page(request, partner: HostingPartner | None, *, status: int = 403, section: str | None = None,
                        htmx_redirect: str = "portal:partner-apply") -> HttpResponse:
    if request.htmx:  # htmx does not swap a 403: send the browser to the page that explains
        return HttpResponseClientRedirect(reverse(htmx_redirect))
    return render(request, BECOME_PARTNER_TEMPLATE, {"partner": partner, "section": section}, status=status)


def operational_partner(request) -> HostingPartner | None:
    partner = getattr(request.user.account, "partner", None)
    return partner if partner is not None and partner.is_operational else None


def partner_required(*, section: str | None = None, htmx_redirect: str = "portal:partner-apply",
                     expired_too: bool = False):
    """A view decorator that passes the partner as the view's second argument. expired_too lets a
    partner whose trial (or term) has ended in as well."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            partner = operational_partner(request)
            if partner is None and expired_too:
                partner = getattr(request.user.account, "partner", None)
                if partner is not None and partner.status != HostingPartner.Status.EXPIRED:
                    partner = None
            if partner is None:
                return become_partner_page(request, getattr(request.user.account, "partner", None),
                                           section=section, htmx_redirect=htmx_redirect)
            return view(request, partner, *args, **kwargs)

        return wrapped

    return decorator


partner_section = partner_required()
