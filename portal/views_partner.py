"""Portal pages for hosting partners: domains with their DNS wizard, clients, the partner figures on
the dashboard, and the page that explains how to become a partner.

They call the same mailcore services and selectors as /v1/hosting. A request made by htmx gets back
only the region it swaps (plus the flash messages, out of band); without JavaScript the same POST
redirects, or renders the page again with its errors.
"""
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.partners.models import HostingPartner, LapseAction
from mailcore.partners.services import hosting_partner_enable
from mailcore.domains.dnscheck import expected_records
from mailcore.domains.models import Domain
from mailcore.domains.services import InvalidDomainName, domain_name_clean, domain_public_records, domain_verify
from mailcore.partners.domains import (
    DomainHasMailboxes,
    DomainLimitReached,
    DomainTaken,
    domain_add_for_partner,
    domain_delete,
)
from mailcore.partners.lifecycle import NOTICE_AHEAD
from mailcore.partners.mailboxes import PARTNER_PLANS
from mailcore.partners.models import PartnerClient, PartnerMailbox
from mailcore.partners.selectors import (
    partner_client_get,
    partner_clients,
    partner_domain_get,
    partner_domains,
    partner_mailboxes,
    partner_mailboxes_ending_soon,
    partner_stats,
)
from mailcore.partners.services import ClientHasDomains, client_create, client_delete, client_update
from portal.access import BECOME_PARTNER_TEMPLATE, become_partner_page, partner_required
from portal.htmx import regions

DOMAINS_TEMPLATE = "portal/domains.html"
DOMAIN_TEMPLATE = "portal/domains_detail.html"
DOMAIN_CONFIRM_TEMPLATE = "portal/domains_confirm.html"
CLIENTS_TEMPLATE = "portal/clients.html"
CLIENT_TEMPLATE = "portal/clients_detail.html"
CLIENT_CONFIRM_TEMPLATE = "portal/clients_confirm.html"

LAPSE_DONE = {LapseAction.SUSPEND: "suspended", LapseAction.DOWNGRADE_FREE: "downgraded to Free"}


# forms: they parse what people type; the services decide what is allowed


class ClientChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: PartnerClient) -> str:
        return obj.name


class DomainAddForm(forms.Form):
    name = forms.CharField(
        label="Domain name", max_length=253,
        help_text="The domain your client's addresses end with, such as example.com: no http://, www or path.",
        widget=forms.TextInput(attrs={"placeholder": "example.com", "autocomplete": "off", "autocapitalize": "none",
                                      "spellcheck": "false", "inputmode": "url"}),
    )
    client = ClientChoiceField(
        label="Client", queryset=PartnerClient.objects.none(), required=False,
        empty_label="A new client named after the domain",
        help_text="Whose domain this is. Mailboxes on it count towards this client.",
    )

    def __init__(self, *args, partner: HostingPartner, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["client"].queryset = PartnerClient.objects.filter(partner=partner)

    # The service checks the name again; asking the same function here shows the error at once.
    def clean_name(self) -> str:
        try:
            return domain_name_clean(self.cleaned_data["name"])
        except InvalidDomainName as exc:
            raise ValidationError(_name_error(exc)) from None


class ClientNameForm(forms.Form):
    name = forms.CharField(label="Client name", max_length=200,
                           help_text="Only you see it: your customer's company or person name.",
                           widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "Acme Ltd"}))


class ClientLapseForm(forms.Form):
    """The client's own lapse action, or "" to follow the partner's default (set on the Settings page)."""

    lapse_action_override = forms.ChoiceField(label="When a mailbox's term ends", widget=forms.RadioSelect,
                                              required=False)

    def __init__(self, *args, partner: HostingPartner, **kwargs):
        super().__init__(*args, **kwargs)
        default = partner.get_default_client_lapse_action_display()
        self.fields["lapse_action_override"].choices = [("", f"Your default ({default})"), *LapseAction.choices]


def _name_error(exc: Exception) -> str:
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}. Enter just the name, such as example.com."


def _field_errors(form: forms.Form, exc: ValidationError, field: str) -> None:
    """A service's ValidationError next to the field it names (the API calls it by another name)."""
    for messages_ in getattr(exc, "message_dict", {field: exc.messages}).values():
        for message in messages_:
            form.add_error(field, f"{message[:1].upper()}{message[1:]}.")


# access


partner_section = partner_required()


def _domain(partner: HostingPartner, domain_id: int) -> Domain:
    try:
        return partner_domain_get(partner=partner, domain_id=domain_id)
    except Domain.DoesNotExist:
        raise Http404("No such domain.") from None


def _client(partner: HostingPartner, client_id: int) -> PartnerClient:
    try:
        return partner_client_get(partner=partner, client_id=client_id)
    except PartnerClient.DoesNotExist:
        raise Http404("No such client.") from None


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


@dataclass
class RecordRow:
    """One DNS record as the wizard shows it: what to create and what the last check found."""

    key: str
    type: str
    host: str
    value: str
    description: str
    ok: bool | None
    found_value: str | None
    reason: str | None
    domain_name: str

    TITLES = {"mx": "Mail routing", "ownership": "Ownership", "spf": "Sender policy (SPF)",
              "dmarc": "Spoofing protection (DMARC)", "dkim": "Signature key (DKIM)"}

    @property
    def title(self) -> str:
        return self.TITLES.get(self.key, self.type)

    @property
    def required(self) -> bool:
        """Verification needs only these two; the others matter for delivery."""
        return self.key in ("mx", "ownership")

    @property
    def fqdn(self) -> str:
        return self.domain_name if self.host == "@" else f"{self.host}.{self.domain_name}"

    @property
    def state(self) -> str:
        return "unchecked" if self.ok is None else ("ok" if self.ok else "wrong")

    @property
    def mx_priority(self) -> str:
        return self.value.split()[0] if self.key == "mx" else ""

    @property
    def mx_host(self) -> str:
        return self.value.split()[-1] if self.key == "mx" else ""

    @property
    def guidance(self) -> str:
        """What to do about a wrong record, in plain words."""
        if self.ok is not False:
            return ""
        reason = self.reason or ""
        at = "at the domain itself (@)" if self.host == "@" else f"with the host {self.host}"
        if self.key == "mx":
            if reason.startswith("no "):
                return (f"Create an MX record {at}. If your provider has a separate Priority field, enter "
                        f"{self.mx_priority} there and {self.mx_host} as the mail server.")
            return (f"Your domain's mail currently goes elsewhere. Replace the existing MX records with ours, or "
                    f"mail keeps arriving at the old server.")
        if self.key == "ownership":
            if "does not match" in reason:
                return ("A verification record exists but holds another token, perhaps from an earlier attempt. "
                        "Change its value to the one above.")
            return (f"Create a TXT record {at} with exactly this value. It can sit beside other TXT records "
                    f"you already have.")
        if self.key == "spf":
            if "two SPF" in reason:
                return ("A domain may have only one SPF record. Merge them: keep one record starting v=spf1 and "
                        "move the other's include: parts into it.")
            if "lacks" in reason:
                return (f"Your SPF record does not allow our servers yet. Add "
                        f"{reason.rsplit(' ', 1)[-1]} to it, just before the final ~all or -all.")
            return (f"Create a TXT record {at} with this value. If you already have an SPF record (starting "
                    f"v=spf1), add our include: to it instead of creating a second one.")
        if self.key == "dmarc":
            if "two" in reason:
                return "Keep only one DMARC record: delete the others at _dmarc."
            if "policy" in reason:
                return "Your DMARC record needs a policy: add p=none (or stricter) to it."
            return f"Create a TXT record {at} with this value."
        if self.key == "dkim":
            if "does not match" in reason:
                return ("The key published is not ours. Replace the record's value with the one above, copied "
                        "whole: a single character missing breaks it.")
            return (f"Create a TXT record {at} with this value, pasted as one long string; most providers split "
                    f"it into parts by themselves.")
        return "Compare the record with the value above and correct it."


def _record_rows(domain: Domain) -> list[RecordRow]:
    """The five records: the last check, or what to create before any check."""
    expected = expected_records(domain)
    stored = domain_public_records(domain)
    if stored is None:  # verified with every record right: the check keeps nothing
        stored = [dict(record.public(), ok=True) for record in expected]
    keys = [record.key for record in expected]
    return [RecordRow(key=keys[index] if index < len(keys) else record["type"].lower(), type=record["type"],
                      host=record["host"], value=record["value"], description=record["description"],
                      ok=record.get("ok"), found_value=record.get("found_value"), reason=record.get("reason"),
                      domain_name=domain.name)
            for index, record in enumerate(stored)]


@dataclass
class DnsSummary:
    total: int
    right: int
    checked: bool


def _dns_summary(domain: Domain) -> DnsSummary:
    """How many records the last check found right, from the stored check (no DNS lookups)."""
    if domain.dns_check == [] and domain.is_verified:
        return DnsSummary(5, 5, True)
    records = domain.dns_check or []
    return DnsSummary(len(records), sum(1 for record in records if record.get("ok")),
                      any(record.get("ok") is not None for record in records))


def _domain_context(partner: HostingPartner, domain: Domain, **extra) -> dict:
    rows = _record_rows(domain)
    return {
        "domain": domain,
        "records": rows,
        "summary": DnsSummary(len(rows), sum(1 for row in rows if row.ok), any(row.ok is not None for row in rows)),
        "mailboxes": list(partner_mailboxes(partner=partner).filter(mailbox__domain=domain)),
        **extra,
    }


def _domains_context(partner: HostingPartner, form: DomainAddForm) -> dict:
    domains = list(partner_domains(partner=partner).select_related("client"))
    for domain in domains:
        domain.summary = _dns_summary(domain)
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
                                                client=form.cleaned_data["client"])
            except InvalidDomainName as exc:
                form.add_error("name", _name_error(exc))
            except DomainTaken:
                form.add_error("name", f"{form.cleaned_data['name']} is already set up with us, by you or another "
                                       "account. If it is your client's, contact support to move it.")
            except DomainLimitReached as exc:
                form.add_error(None, f"Not added: {exc}.")
            else:
                messages.success(request, f"{domain.name} added. Create the five DNS records below at your client's "
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
    domain = _domain(partner, domain_id)
    return render(request, DOMAIN_TEMPLATE, _domain_context(partner, domain))


@require_POST
@partner_section
def domain_check(request, partner, domain_id: int):
    """Look the records up now; each one's status is updated in place."""
    domain = _domain(partner, domain_id)
    was_verified = domain.is_verified
    domain = domain_verify(domain=domain)
    context = _domain_context(partner, domain, checked_at=timezone.now(), just_verified=(
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


@require_http_methods(["GET", "POST"])
@partner_section
def domain_remove(request, partner, domain_id: int):
    """GET asks for confirmation (without JavaScript); POST deletes, or explains why it cannot (409)."""
    domain = _domain(partner, domain_id)
    context = _domain_context(partner, domain)
    if request.method == "GET":
        return render(request, DOMAIN_CONFIRM_TEMPLATE, context)
    try:
        domain_delete(domain=domain)
    except DomainHasMailboxes:
        context["blocked"] = True
        if request.htmx:  # htmx swaps only 2xx: the explanation replaces the delete card
            return regions(request, DOMAIN_TEMPLATE, ["domain-delete"], context)
        return render(request, DOMAIN_CONFIRM_TEMPLATE, context, status=409)
    messages.success(request, f"{domain.name} deleted. Its DNS records can be removed at its DNS provider.")
    url = reverse("portal:domains")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# clients


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
        except ValidationError as exc:
            _field_errors(form, exc, "name")
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
    domain.summary = _dns_summary(domain)
    return domain


@require_GET
@partner_section
def client_detail(request, partner, client_id: int):
    client = _client(partner, client_id)
    return render(request, CLIENT_TEMPLATE, _client_context(partner, client))


@require_POST
@partner_section
def client_rename(request, partner, client_id: int):
    client = _client(partner, client_id)
    form = ClientNameForm(request.POST)
    renamed = False
    if form.is_valid():
        old = client.name
        try:
            client_update(client=client, name=form.cleaned_data["name"])
        except ValidationError as exc:
            _field_errors(form, exc, "name")
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
    client = _client(partner, client_id)
    form = ClientLapseForm(request.POST, partner=partner)
    saved = False
    if form.is_valid():
        try:
            client_update(client=client, lapse_action_override=form.cleaned_data["lapse_action_override"] or None)
        except ValidationError as exc:
            _field_errors(form, exc, "lapse_action_override")
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
    client = _client(partner, client_id)
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


# the dashboard's partner figures


@dataclass
class Bar:
    label: str
    count: int
    percent: float
    tone: str


def _bars(counts: list[tuple[str, int, str]]) -> list[Bar]:
    """Bars scaled to the largest value, so a small count is still visible beside a big one."""
    largest = max([count for _, count, _ in counts] + [1])
    return [Bar(label, count, round(100 * count / largest, 1), tone) for label, count, tone in counts]


def _parts(counts: list[tuple[str, int, str]]) -> dict:
    """Segments of one stacked bar (shares of the total), each with its x offset in a 0-100 box."""
    total = sum(count for _, count, _ in counts)
    offset, parts = 0.0, []
    for label, count, tone in counts:
        width = round(100 * count / total, 2) if total else 0
        parts.append({"label": label, "count": count, "x": offset, "width": width, "tone": tone,
                      "percent": round(width)})
        offset = round(offset + width, 2)
    return {"total": total, "parts": parts}


STATUS_TONES = {"trial": "info", "active": "ok", "expired": "muted", "suspended": "danger",
                "pending_payment": "warn"}


def partner_dashboard(partner: HostingPartner) -> dict:
    """The partner's figures, charts and what needs attention, in a fixed number of queries."""
    stats = partner_stats(partner=partner)
    now = timezone.now()
    expiring = partner_mailboxes_ending_soon(partner=partner, within=NOTICE_AHEAD)
    for partner_mailbox in expiring:
        partner_mailbox.overdue = partner_mailbox.expires_at <= now  # the sweep lapses it within the minute
    by_status = stats["mailboxes_by_status"]
    by_plan = stats["mailboxes_by_plan"]
    domains_free = max(stats["domain_limit"] - stats["domains_total"], 0)
    pending_domains = [
        {**row, "right": sum(1 for record in row["dns_records"] or [] if record.get("ok")),
         "total": len(row["dns_records"] or []),
         "checked": any(record.get("ok") is not None for record in row["dns_records"] or [])}
        for row in stats["pending_domain_setup"]
    ]
    return {
        "stats": stats,
        "clients_total": partner_clients(partner=partner).count(),
        "slots_total": stats["slots_unused"] + stats["slots_assigned"],
        "domains_free": domains_free,
        "by_status": _bars([(label, by_status.get(value, 0), STATUS_TONES[value])
                            for value, label in PartnerMailbox.Status.choices]),
        "by_plan": _bars([(plan.title(), by_plan.get(plan, 0), "primary") for plan in PARTNER_PLANS]),
        "slots": _parts([("In use", stats["slots_assigned"], "primary"), ("Free", stats["slots_unused"], "ok")]),
        "domains": _parts([("Verified", stats["domains_verified"], "ok"),
                           ("Awaiting DNS", stats["domains_pending"] + stats["domains_failed"], "warn"), ("Free", domains_free, "muted")]),
        "pending_domains": pending_domains,
        "expiring": expiring,
        "attention_count": len(pending_domains) + len(expiring),
        "notice_days": NOTICE_AHEAD.days,
    }
