"""The owner's spam settings in the webmail: how strictly mail goes to Junk (only ever stricter than
the domain's) and the senders always let in or always refused. Plain forms; with htmx adding
or removing a sender swaps only the list. Writes go through protection.services, as /protection does."""
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.errors import InvalidFields
from portal.sender_rules import sender_lists
from portal.webmail.access import owner_required
from portal.webmail.owner_settings import SECTIONS
from portal.webmail.settings_forms import FilteringForm, SenderRuleForm
from protection.models import SenderRule
from protection.selectors import mailbox_domain_junk_at, mailbox_policy_get, mailbox_sender_rules
from protection.services import mailbox_policy_set, mailbox_sender_rule_add, sender_rule_delete

TEMPLATE = "webmail/settings/protection.html"


def _context(mailbox, **extra) -> dict:
    rules = list(mailbox_sender_rules(mailbox=mailbox))
    for rule in rules:
        rule.delete_url = reverse("webmail:settings_sender_delete", args=[rule.pk])
    return {"mailbox": mailbox, "sections": SECTIONS, "domain_junk_at": mailbox_domain_junk_at(mailbox=mailbox),
            "sender_lists": sender_lists(rules), "add_url": reverse("webmail:settings_sender_add"), **extra}


def _filtering_form(mailbox, data=None) -> FilteringForm:
    return FilteringForm(data, initial={"junk_at": mailbox_policy_get(mailbox=mailbox).junk_at})


def _sender_form(request, data=None) -> SenderRuleForm:
    """Prefilled from ?sender=&kind= (the message page's "Block this sender" links here)."""
    initial = {"sender": request.GET.get("sender", "")[:320]}
    if request.GET.get("kind") in SenderRule.Kind.values:
        initial["kind"] = request.GET["kind"]
    return SenderRuleForm(data, initial=initial)


@require_http_methods(["GET", "POST"])
@owner_required
def settings_protection(request, mailbox):
    """The page; POST saves the Junk threshold."""
    form = _filtering_form(mailbox, request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            try:
                policy = mailbox_policy_set(mailbox=mailbox, junk_at=form.cleaned_data["junk_at"])
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, "Saved. Mail arriving from now on goes to Junk from a spam score of "
                                          f"{policy.junk_at:g}." if policy.junk_at is not None else
                                 "Saved. Your mailbox follows your provider's spam setting.")
                return redirect("webmail:settings_protection")
        return render(request, TEMPLATE, _context(mailbox, form=form, sender_form=_sender_form(request)), status=400)
    return render(request, TEMPLATE, _context(mailbox, form=form, sender_form=_sender_form(request)))


def _senders_answer(request, mailbox, *, sender_form, status: int = 200, message: str = ""):
    if request.htmx:
        return render(request, f"{TEMPLATE}#sender-rules",
                      _context(mailbox, sender_form=sender_form, status=message), status=status)
    if status == 200:
        messages.success(request, message)
        return redirect("webmail:settings_protection")
    return render(request, TEMPLATE, _context(mailbox, form=_filtering_form(mailbox), sender_form=sender_form),
                  status=status)


@require_POST
@owner_required
def settings_sender_add(request, mailbox):
    form = SenderRuleForm(request.POST)
    if form.is_valid():
        try:
            rule = mailbox_sender_rule_add(mailbox=mailbox, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        else:
            said = "always let in" if rule.kind == SenderRule.Kind.ALLOW else "always refused"
            return _senders_answer(request, mailbox, sender_form=SenderRuleForm(),
                                   message=f"{rule.sender} is {said}.")
    # htmx swaps only 2xx: the form with its errors comes back as a 200 region
    return _senders_answer(request, mailbox, sender_form=form, status=200 if request.htmx else 400)


@require_POST
@owner_required
def settings_sender_delete(request, mailbox, rule_id: int):
    rule = mailbox_sender_rules(mailbox=mailbox).filter(pk=rule_id).first()
    if rule is None:
        raise Http404("No such sender.")
    sender_rule_delete(rule=rule)
    return _senders_answer(request, mailbox, sender_form=SenderRuleForm(), message=f"{rule.sender} removed.")
