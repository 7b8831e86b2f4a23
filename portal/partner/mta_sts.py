"""A client domain's MTA-STS policy in the partner portal: what it is, the policy served, and the mode
switch (testing, enforce, none). The same service as /v1/hosting/domains/{id}/mta-sts."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from mailcore.domains.mta_sts import (
    MTA_STS_LABEL,
    POLICY_PATH,
    domain_mta_sts_mode_set,
    mta_sts_policy,
    mta_sts_record_value,
)
from mailcore.errors import InvalidFields
from portal.partner.access import partner_section
from portal.partner.domains import domain_of
from portal.partner.forms import DomainMtaStsForm

TEMPLATE = "portal/domains_mta_sts.html"


@require_http_methods(["GET", "POST"])
@partner_section
def domain_mta_sts(request, partner, domain_id: int):
    """The page; POST switches the mode."""
    domain = domain_of(partner, domain_id)
    form = DomainMtaStsForm(request.POST or None, initial={"mode": domain.mta_sts_mode})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                domain_mta_sts_mode_set(domain=domain, mode=form.cleaned_data["mode"])
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"{domain.name}'s MTA-STS policy is now in {domain.mta_sts_mode} mode. "
                                          f"Update the _mta-sts record to {mta_sts_record_value(domain)} so "
                                          "senders fetch it again.")
                return redirect("portal:domain-mta-sts", domain_id=domain.pk)
        status = 400
    return render(request, TEMPLATE, {
        "domain": domain, "form": form, "policy": mta_sts_policy(domain), "record": mta_sts_record_value(domain),
        "policy_url": f"https://{MTA_STS_LABEL}.{domain.name}{POLICY_PATH}"}, status=status)
