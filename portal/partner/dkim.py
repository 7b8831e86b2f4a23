"""The DKIM card of a domain's page (the DNS wizard): start or cancel a key rotation, and set its
schedule and Ed25519. The same services as /v1/hosting/domains/{id}/dkim and /dkim-rotation; each
form is a plain POST that comes back to the domain's page, whose DNS records show what to publish."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from mailcore.domains.rotation import (
    DkimRotationRunning,
    NoDkimRotationToCancel,
    dkim_rotation_cancel,
    dkim_rotation_start,
    dkim_settings_set,
)
from mailcore.errors import DomainError, InvalidFields
from portal.partner.access import partner_section
from portal.partner.domains import DOMAIN_TEMPLATE, domain_context, domain_of
from portal.partner.forms import DkimSettingsForm


@require_POST
@partner_section
def dkim_rotate(request, partner, domain_id: int):
    """Start a rotation: the new key's record appears among the DNS records to publish."""
    domain = domain_of(partner, domain_id)
    try:
        key = dkim_rotation_start(domain=domain)
    except DkimRotationRunning as exc:
        messages.error(request, f"Not started: {exc}.")
    else:
        messages.success(request, f"Rotation started. Publish the new DKIM record ({key.selector}._domainkey) "
                                  "below; mail is signed with the new key once we see it in DNS.")
    return redirect("portal:domain", domain_id=domain.pk)


@require_POST
@partner_section
def dkim_cancel(request, partner, domain_id: int):
    """Drop the new key before signing switches to it."""
    domain = domain_of(partner, domain_id)
    try:
        dkim_rotation_cancel(domain=domain)
    except NoDkimRotationToCancel as exc:
        messages.error(request, f"Nothing cancelled: {exc}.")
    else:
        messages.success(request, "Rotation cancelled. The current key keeps signing; the new record may be "
                                  "removed if you published it.")
    return redirect("portal:domain", domain_id=domain.pk)


@require_POST
@partner_section
def dkim_settings(request, partner, domain_id: int):
    """Save the schedule and Ed25519; a refused value comes back beside its field (400)."""
    domain = domain_of(partner, domain_id)
    form = DkimSettingsForm(request.POST)
    if form.is_valid():
        try:
            dkim_settings_set(domain=domain, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        except DomainError as exc:  # Ed25519 back on while both its selectors are still published
            form.add_error(None, f"Not saved: {exc.detail}.")
        else:
            messages.success(request, f"DKIM settings of {domain.name} saved.")
            return redirect("portal:domain", domain_id=domain.pk)
    return render(request, DOMAIN_TEMPLATE, domain_context(partner, domain, dkim_form=form), status=400)
