"""Portal pages for a hosting partner's domains: the list, the DNS wizard and its check, deletion,
and the page that explains how to become a partner.

They call the same mailcore services and selectors as /v1/hosting. A request made by htmx gets back
only the region it swaps (plus the flash messages, out of band); without JavaScript the same POST
redirects, or renders the page again with its errors.
"""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.domains.models import Domain
from mailcore.domains.rotation import dkim_status
from mailcore.domains.selectors import account_domains
from mailcore.domains.services import DomainClaimGone, InvalidDomainName, domain_claim_lapsed, domain_verify
from mailcore.errors import InvalidFields
from mailcore.mailboxes.routing import domain_catch_all_clear, domain_catch_all_set
from mailcore.partners.domains import (
    DomainHasAliasDomains,
    DomainHasMailboxes,
    DomainLimitReached,
    DomainTaken,
    domain_add_for_partner,
    domain_delete,
)
from mailcore.partners.models import HostingPartner
from mailcore.partners.selectors import partner_domain_get, partner_domains, partner_mailboxes
from mailcore.partners.services import hosting_partner_enable
from portal.htmx import regions
from portal.access import found_or_404
from portal.partner.access import BECOME_PARTNER_TEMPLATE, operational_partner, partner_section
from portal.partner.dns_wizard import dns_summary, domain_dns_summary, recommended_rows, record_rows
from portal.partner.forms import CatchAllForm, DkimSettingsForm, DomainAddForm, name_error

DOMAINS_TEMPLATE = "portal/domains.html"
DOMAIN_TEMPLATE = "portal/domains_detail.html"
DOMAIN_CONFIRM_TEMPLATE = "portal/domains_confirm.html"
ACCOUNT_DOMAINS_TEMPLATE = "portal/account_domains.html"


def domain_of(partner: HostingPartner, domain_id: int) -> Domain:
    return found_or_404(partner_domain_get, "domain", partner=partner, domain_id=domain_id)


# becoming a partner


@require_http_methods(["GET", "POST"])
@login_required
def partner_apply(request):
    """What partners get and how to apply; POST files the application (a pending partner account)."""
    account = request.user.account
    partner = getattr(account, "partner", None)
    if request.method == "POST":
        if partner is None:
            hosting_partner_enable(account=account, status=HostingPartner.Status.PENDING)
            messages.success(request, "Application sent. We review it within two working days and write to you.")
        else:
            messages.info(request, "Your account already has a partner profile; nothing changed.")
        if request.htmx:
            return HttpResponseClientRedirect(reverse("portal:partner-apply"))
        return redirect("portal:partner-apply")
    return render(request, BECOME_PARTNER_TEMPLATE, {"partner": partner})


# domains and their DNS records


def _catch_all_choices(mailboxes: list) -> list[str]:
    """The addresses a domain's catch-all may be: its active mailboxes (the service checks again)."""
    return [held.mailbox.address for held in mailboxes if held.mailbox.is_active]


def domain_context(partner: HostingPartner, domain: Domain, **extra) -> dict:
    rows = record_rows(domain)
    mailboxes = list(partner_mailboxes(partner=partner).filter(mailbox__domain=domain))
    return {
        "catch_all_form": extra.pop("catch_all_form", None) or CatchAllForm(
            mailboxes=_catch_all_choices(mailboxes),
            initial={"address": domain.catch_all.address if domain.catch_all_id else None}),
        "dkim": dkim_status(domain=domain),
        "dkim_form": DkimSettingsForm(initial={"rotate_every_months": domain.dkim_rotate_every_months,
                                               "ed25519": domain.dkim_ed25519}),
        "domain": domain,
        "records": rows,
        "summary": dns_summary(rows),
        "recommended": recommended_rows(domain),
        "mailboxes": mailboxes,
        "claim_lapsed": domain_claim_lapsed(domain),
        **extra,
    }


def _domains_context(partner: HostingPartner, form: DomainAddForm) -> dict:
    domains = list(partner_domains(partner=partner).select_related("client"))
    for domain in domains:
        domain.summary = domain_dns_summary(domain)
    return {"domains": domains, "form": form, "domain_limit": partner.domain_limit,
            "limit_reached": len(domains) >= partner.domain_limit}


@require_http_methods(["GET", "POST"])
@partner_section
def domains(request, partner):
    """The partner's domains and the form that adds one; a new domain opens its DNS wizard."""
    if request.method == "POST":
        form = DomainAddForm(request.POST, partner=partner)
        if form.is_valid():
            try:
                domain = domain_add_for_partner(partner=partner, name=form.cleaned_data["name"],
                                                client=form.cleaned_data["client"],
                                                alias_of=form.cleaned_data["alias_of"])
            except InvalidFields as exc:
                form.add_service_error(exc)
            except InvalidDomainName as exc:
                form.add_error("name", name_error(exc))
            except DomainTaken:
                form.add_error("name", f"{form.cleaned_data['name']} is already set up with us, by you or another "
                                       "account. If it is your client's, contact support to move it.")
            except DomainLimitReached as exc:
                form.add_error(None, f"Not added: {exc}.")
            else:
                messages.success(request, f"{domain.name} added. Create the DNS records below at your client's "
                                          "DNS provider, then check the DNS.")
                url = reverse("portal:domain", kwargs={"domain_id": domain.pk})
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    else:
        form = DomainAddForm(partner=partner, initial={"client": request.GET.get("client")})
    context = _domains_context(partner, form)
    if request.htmx and request.method == "POST":
        return regions(request, DOMAINS_TEMPLATE, ["domain-form"], context)
    return render(request, DOMAINS_TEMPLATE, context)


@require_GET
@partner_section
def domain_detail(request, partner, domain_id: int):
    """The DNS wizard: each record to create, and where the last check stands."""
    domain = domain_of(partner, domain_id)
    return render(request, DOMAIN_TEMPLATE, domain_context(partner, domain))


@require_POST
@partner_section
def domain_check(request, partner, domain_id: int):
    """Look the records up now; each one's status is updated in place."""
    domain = domain_of(partner, domain_id)
    was_verified = domain.is_verified
    try:
        domain = domain_verify(domain=domain)
    except DomainClaimGone as gone:
        messages.error(request, str(gone))
        url = reverse("portal:domains")
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    context = domain_context(partner, domain, checked_at=timezone.now(), just_verified=(
        domain.is_verified and not was_verified))
    if request.htmx:
        return regions(request, DOMAIN_TEMPLATE, ["dns-records", "dns-check-status", "domain-status", "domain-setup",
                                                   "domain-mailboxes"], context)
    summary = context["summary"]
    if context["just_verified"]:
        messages.success(request, f"{domain.name} is verified: you can create mailboxes on it now.")
    elif summary.right == summary.total:
        messages.success(request, f"All {summary.total} records of {domain.name} are right.")
    else:
        messages.warning(request, f"{summary.right} of {summary.total} records are right; see what to fix below.")
    return redirect("portal:domain", domain_id=domain.pk)


@require_POST
@partner_section
def domain_catch_all(request, partner, domain_id: int):
    """Set the catch-all mailbox (`address`), or turn it off (`clear`); the same services as the API."""
    domain = domain_of(partner, domain_id)
    context = domain_context(partner, domain)
    if "clear" in request.POST:
        domain_catch_all_clear(domain=domain)
        messages.success(request, f"Catch-all off: mail to unknown addresses on {domain.name} is refused again.")
    else:
        form = CatchAllForm(request.POST, mailboxes=_catch_all_choices(context["mailboxes"]))
        if form.is_valid():
            try:
                domain_catch_all_set(domain=domain, address=form.cleaned_data["address"])
            except InvalidFields as exc:
                form.add_error(None, exc.detail)
        if form.errors:
            context = domain_context(partner, domain, catch_all_form=form)
            if request.htmx:
                return regions(request, DOMAIN_TEMPLATE, ["domain-catch-all"], context)
            return render(request, DOMAIN_TEMPLATE, context, status=422)
        messages.success(request, f"Mail to unknown addresses on {domain.name} now goes to "
                                  f"{form.cleaned_data['address']}.")
    url = reverse("portal:domain", kwargs={"domain_id": domain.pk})
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_http_methods(["GET", "POST"])
@partner_section
def domain_remove(request, partner, domain_id: int):
    """GET asks for confirmation (without JavaScript); POST deletes, or explains why it cannot (409)."""
    domain = domain_of(partner, domain_id)
    context = domain_context(partner, domain)
    if request.method == "GET":
        return render(request, DOMAIN_CONFIRM_TEMPLATE, context)
    try:
        domain_delete(domain=domain)
    except DomainHasAliasDomains as exc:
        messages.error(request, str(exc))
        url = reverse("portal:domain", kwargs={"domain_id": domain.pk})
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    except DomainHasMailboxes:
        context["blocked"] = True
        if request.htmx:  # htmx swaps only 2xx: the explanation replaces the delete card
            return regions(request, DOMAIN_TEMPLATE, ["domain-delete"], context)
        return render(request, DOMAIN_CONFIRM_TEMPLATE, context, status=409)
    messages.success(request, f"{domain.name} deleted. Its DNS records can be removed at its DNS provider.")
    url = reverse("portal:domains")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_GET
@login_required
def account_domains_page(request):
    """An account's own domains and the DNS records each needs, read-only (the same records as GET
    /domains). A hosting partner manages its domains on the Domains pages instead."""
    if operational_partner(request) is not None:
        return redirect("portal:domains")
    rows = list(account_domains(account=request.user.account))
    for domain in rows:
        domain.records = record_rows(domain)
        domain.summary = dns_summary(domain.records)
    return render(request, ACCOUNT_DOMAINS_TEMPLATE, {"domains": rows})
