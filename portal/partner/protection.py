"""A client domain's spam protection in the partner portal: its thresholds (Junk, quarantine,
refusal) and the senders allowed or blocked for all of its mailboxes. The same services as
/v1/hosting/domains/{id}/protection and /sender-rules; with htmx adding or removing a sender swaps
only the list, and every form works without JavaScript."""
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from portal.forms import SenderRuleForm
from portal.partner.access import partner_section
from portal.partner.domains import domain_of
from portal.partner.forms import DomainProtectionForm
from portal.sender_rules import sender_lists
from protection.models import SenderRule
from protection.selectors import domain_policy_get, domain_sender_rules
from protection.services import domain_policy_reset, domain_policy_set, domain_sender_rule_add, sender_rule_delete

TEMPLATE = "portal/domains_protection.html"
FIELDS = ("junk_at", "quarantine_at", "refuse_at", "greylist")


def _context(domain: Domain, **extra) -> dict:
    rules = list(domain_sender_rules(domain=domain))
    for rule in rules:
        rule.delete_url = reverse("portal:domain-sender-delete", args=[domain.pk, rule.pk])
    return {"domain": domain, "policy": domain_policy_get(domain=domain), "sender_lists": sender_lists(rules),
            "add_url": reverse("portal:domain-sender-add", args=[domain.pk]), **extra}


def _policy_form(domain: Domain, data=None) -> DomainProtectionForm:
    policy = domain_policy_get(domain=domain)
    return DomainProtectionForm(data, initial={name: getattr(policy, name) for name in FIELDS})


@require_http_methods(["GET", "POST"])
@partner_section
def domain_protection(request, partner, domain_id: int):
    """The page; POST saves the thresholds, or with `reset` goes back to the defaults."""
    domain = domain_of(partner, domain_id)
    if request.method == "POST" and "reset" in request.POST:
        domain_policy_reset(domain=domain)
        messages.success(request, f"{domain.name} is back to the default thresholds.")
        return redirect("portal:domain-protection", domain_id=domain.pk)
    form = _policy_form(domain, request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                domain_policy_set(domain=domain, **form.cleaned_data)
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, f"Saved. Mail for {domain.name} arriving from now on uses these "
                                          "thresholds.")
                return redirect("portal:domain-protection", domain_id=domain.pk)
        return render(request, TEMPLATE, _context(domain, form=form, sender_form=SenderRuleForm()), status=400)
    return render(request, TEMPLATE, _context(domain, form=form, sender_form=SenderRuleForm()))


def _senders_answer(request, domain: Domain, *, sender_form, status: int = 200, message: str = ""):
    if request.htmx:
        return render(request, f"{TEMPLATE}#sender-rules", _context(domain, sender_form=sender_form, status=message))
    if status == 200:
        messages.success(request, message)
        return redirect("portal:domain-protection", domain_id=domain.pk)
    return render(request, TEMPLATE, _context(domain, form=_policy_form(domain), sender_form=sender_form),
                  status=status)


@require_POST
@partner_section
def domain_sender_add(request, partner, domain_id: int):
    domain = domain_of(partner, domain_id)
    form = SenderRuleForm(request.POST)
    if form.is_valid():
        try:
            rule = domain_sender_rule_add(domain=domain, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        else:
            said = "always let in" if rule.kind == SenderRule.Kind.ALLOW else "always refused"
            return _senders_answer(request, domain, sender_form=SenderRuleForm(),
                                   message=f"{rule.sender} is {said} for {domain.name}.")
    return _senders_answer(request, domain, sender_form=form, status=400)


@require_POST
@partner_section
def domain_sender_delete(request, partner, domain_id: int, rule_id: int):
    domain = domain_of(partner, domain_id)
    rule = domain_sender_rules(domain=domain).filter(pk=rule_id).first()
    if rule is None:
        raise Http404("No such sender.")
    sender_rule_delete(rule=rule)
    return _senders_answer(request, domain, sender_form=SenderRuleForm(), message=f"{rule.sender} removed.")
