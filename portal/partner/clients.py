"""Portal pages for a hosting partner's clients: list and create, detail, rename, lapse action,
delete. Same services as /v1/hosting/clients."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from mailcore.partners.models import HostingPartner, PartnerClient
from mailcore.partners.selectors import partner_client_get, partner_clients, partner_domains, partner_mailboxes
from mailcore.partners.services import ClientHasDomains, client_create, client_delete, client_update
from portal.htmx import regions
from portal.access import found_or_404
from portal.partner.access import partner_section
from portal.partner.dns_wizard import domain_dns_summary
from portal.partner.forms import LAPSE_DONE, ClientLapseForm, ClientNameForm, field_errors

CLIENTS_TEMPLATE = "portal/clients.html"
CLIENT_TEMPLATE = "portal/clients_detail.html"
CLIENT_CONFIRM_TEMPLATE = "portal/clients_confirm.html"


def client_of(partner: HostingPartner, client_id: int) -> PartnerClient:
    return found_or_404(partner_client_get, "client", partner=partner, client_id=client_id)


def _clients_context(partner: HostingPartner, form: ClientNameForm, **extra) -> dict:
    return {"clients": list(partner_clients(partner=partner)), "form": form, "partner": partner,
            "default_lapse_done": LAPSE_DONE[partner.default_client_lapse_action], **extra}


@require_http_methods(["GET", "POST"])
@partner_section
def clients(request, partner):
    """The partner's clients and the form that adds one."""
    form = ClientNameForm(request.POST if request.method == "POST" else None)
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            created = client_create(partner=partner, name=form.cleaned_data["name"])
        except InvalidFields as exc:
            field_errors(form, exc, "name")
        else:
            messages.success(request, f"Client {created.name} created. Add a domain for it next.")
            if not request.htmx:
                return redirect("portal:client", client_id=created.pk)
            form = ClientNameForm()
    context = _clients_context(partner, form, created=created)
    if request.htmx and request.method == "POST":
        return regions(request, CLIENTS_TEMPLATE, ["client-form", "clients"] if created else ["client-form"],
                        context)
    return render(request, CLIENTS_TEMPLATE, context)


def _client_context(partner: HostingPartner, client: PartnerClient, **forms_) -> dict:
    return {
        "client": client,
        "partner": partner,
        "name_form": forms_.get("name_form") or ClientNameForm(initial={"name": client.name}),
        "lapse_form": forms_.get("lapse_form") or ClientLapseForm(
            partner=partner, initial={"lapse_action_override": client.lapse_action_override or ""}),
        "domains": [_with_summary(domain) for domain in partner_domains(partner=partner).filter(client=client)],
        "mailboxes": list(partner_mailboxes(partner=partner).filter(mailbox__domain__client=client)),
        "blocked": forms_.get("blocked", False),
    }


def _with_summary(domain: Domain) -> Domain:
    domain.summary = domain_dns_summary(domain)
    return domain


@require_GET
@partner_section
def client_detail(request, partner, client_id: int):
    client = client_of(partner, client_id)
    return render(request, CLIENT_TEMPLATE, _client_context(partner, client))


@require_POST
@partner_section
def client_rename(request, partner, client_id: int):
    client = client_of(partner, client_id)
    form = ClientNameForm(request.POST)
    renamed = False
    if form.is_valid():
        old = client.name
        try:
            client_update(client=client, name=form.cleaned_data["name"])
        except InvalidFields as exc:
            field_errors(form, exc, "name")
        else:
            renamed = True
            messages.success(request, f"{old} renamed to {client.name}.")
            if not request.htmx:
                return redirect("portal:client", client_id=client.pk)
    context = _client_context(partner, client, name_form=None if renamed else form)
    if request.htmx:
        return regions(request, CLIENT_TEMPLATE, ["client-name", "client-heading"] if renamed else ["client-name"],
                        context)
    return render(request, CLIENT_TEMPLATE, context)


@require_POST
@partner_section
def client_lapse(request, partner, client_id: int):
    """Set or clear the client's own lapse action."""
    client = client_of(partner, client_id)
    form = ClientLapseForm(request.POST, partner=partner)
    saved = False
    if form.is_valid():
        try:
            client_update(client=client, lapse_action_override=form.cleaned_data["lapse_action_override"] or None)
        except InvalidFields as exc:
            field_errors(form, exc, "lapse_action_override")
        else:
            saved = True
            if client.lapse_action_override:
                messages.success(request, f"Saved: when a term ends, {client.name}'s mailboxes are "
                                          f"{LAPSE_DONE[client.lapse_action_override]}.")
            else:
                messages.success(request, f"Saved: {client.name} follows your default "
                                          f"({partner.get_default_client_lapse_action_display()}).")
            if not request.htmx:
                return redirect("portal:client", client_id=client.pk)
    context = _client_context(partner, client, lapse_form=None if saved else form)
    if request.htmx:
        return regions(request, CLIENT_TEMPLATE, ["client-lapse", "client-heading"], context)
    return render(request, CLIENT_TEMPLATE, context)


@require_http_methods(["GET", "POST"])
@partner_section
def client_remove(request, partner, client_id: int):
    """GET asks for confirmation (without JavaScript); POST deletes, or explains why it cannot (409)."""
    client = client_of(partner, client_id)
    if request.method == "GET":
        return render(request, CLIENT_CONFIRM_TEMPLATE, _client_context(partner, client))
    try:
        client_delete(client=client)
    except ClientHasDomains:
        context = _client_context(partner, client, blocked=True)
        if request.htmx:
            return regions(request, CLIENT_TEMPLATE, ["client-delete"], context)
        return render(request, CLIENT_CONFIRM_TEMPLATE, context, status=409)
    messages.success(request, f"Client {client.name} deleted.")
    url = reverse("portal:clients")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
