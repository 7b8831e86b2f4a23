"""The owner's settings: password, identity (name and signature), forwarding, filters and the
vacation reply. Every page is a plain form (no JavaScript needed); with htmx, reordering filters
swaps only the list. Writes go through the same services the partner API and portal use
(mailboxes: identity, forwarding, password) and mailcore.rules.filters, which publishes the Sieve
script Dovecot runs at delivery."""
from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from mailcore.errors import DomainError, InvalidFields
from mailcore.ipnets import client_ip
from mailcore.mailboxes import forwarding
from mailcore.mailboxes.models import ForwardingRule
from mailcore.mailboxes.services import mailbox_set_identity
from mailcore.throttle import LoginThrottled
from mailcore.rules.filters import (
    mail_filter_create,
    mail_filter_delete,
    mail_filter_get,
    mail_filter_list,
    mail_filter_move,
    mail_filter_update,
    vacation_get,
    vacation_set,
)
from mailcore.rules.models import MailFilter
from mailcore.throttle import ActionThrottled
from webmail.owner import owner_forwarding_rule, owner_forwarding_rules, owner_password_change
from portal.webmail.access import owner_required, webmail_session
from portal.webmail.frame import webmail_frame
from portal.webmail.settings_forms import (
    FilterForm,
    ForwardingRuleEnabledForm,
    ForwardingRuleForm,
    MailboxIdentityForm,
    PasswordChangeForm,
    VacationForm,
)

SECTIONS = [
    ("webmail:settings_password", "Password"),
    ("webmail:settings_identity", "Name and signature"),
    ("webmail:settings_forwarding", "Forwarding"),
    ("webmail:settings_filters", "Filters"),
    ("webmail:settings_vacation", "Vacation reply"),
    ("webmail:settings_protection", "Spam and senders"),
    ("webmail:settings_mail_apps", "Mail apps"),
]


def _page(request, mailbox, template: str, context: dict, *, status: int = 200):
    return render(request, f"webmail/settings/{template}", {"mailbox": mailbox, "sections": SECTIONS, **context},
                  status=status)


@require_http_methods(["GET"])
@owner_required
def settings_index(request, mailbox):
    return _page(request, mailbox, "index.html", {
        "filters": mail_filter_list(mailbox=mailbox).count(),
        "vacation": vacation_get(mailbox=mailbox),
        "rules": owner_forwarding_rules(mailbox=mailbox).count(),
    })


# password


@require_http_methods(["GET", "POST"])
@owner_required
def settings_password(request, mailbox):
    form = PasswordChangeForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                ended = owner_password_change(
                    session=webmail_session(request), current_password=data["current_password"],
                    new_password=data["new_password"],
                    client_ip=client_ip(request.META, settings.TRUSTED_PROXY_COUNT))
            except LoginThrottled as exc:
                form.add_error(None, exc.detail)
                status = 429
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                others = f" {ended} other webmail session{'s' if ended != 1 else ''} signed out." if ended else ""
                messages.success(request, "Password changed. Mail apps on your devices need the new password now."
                                 + others)
                return redirect("webmail:settings_password")
    return _page(request, mailbox, "password.html", {"form": form}, status=status)


# identity


@require_http_methods(["GET", "POST"])
@owner_required
def settings_identity(request, mailbox):
    form = MailboxIdentityForm(request.POST or None, initial={"display_name": mailbox.display_name,
                                                             "signature_html": mailbox.signature_html})
    if request.method == "POST":
        if form.is_valid():
            try:
                mailbox_set_identity(mailbox=mailbox, **form.cleaned_data)
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, "Saved. New mail from this mailbox uses this name and signature.")
                return redirect("webmail:settings_identity")
        return _page(request, mailbox, "identity.html", {"form": form}, status=400)
    return _page(request, mailbox, "identity.html", {"form": form})


# forwarding


def _rule_or_404(mailbox, rule_id: int) -> ForwardingRule:
    try:
        return owner_forwarding_rule(mailbox=mailbox, rule_id=rule_id)
    except ForwardingRule.DoesNotExist:
        raise Http404("No such forwarding rule.") from None


@require_http_methods(["GET", "POST"])
@owner_required
def settings_forwarding(request, mailbox):
    form = ForwardingRuleForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                rule = forwarding.forwarding_rule_create(mailbox=mailbox, email=mailbox.address, **form.cleaned_data)
            except InvalidFields as exc:
                form.add_service_error(exc)
            except forwarding.ConfirmationNotSent:
                form.add_error(None, "The confirmation mail could not be sent, so nothing was added. Try again in "
                                     "a minute.")
                status = 503
            except ActionThrottled as exc:
                form.add_error(None, exc.detail)
                status = 429
            else:
                messages.success(request, f"We emailed {rule.forward_to} a link to confirm. Mail is forwarded once "
                                          "they confirm.")
                return redirect("webmail:settings_forwarding")
    return _page(request, mailbox, "forwarding.html",
                 {"form": form, "rules": owner_forwarding_rules(mailbox=mailbox)}, status=status)


@require_POST
@owner_required
def settings_forwarding_enabled(request, mailbox, rule_id: int):
    """Turn a rule on or off: the form says which, so a second submit does not flip it back."""
    rule = _rule_or_404(mailbox, rule_id)
    form = ForwardingRuleEnabledForm(request.POST)
    form.is_valid()  # one optional boolean: always valid
    rule = forwarding.forwarding_rule_set_enabled(rule=rule, enabled=form.cleaned_data["enabled"])
    messages.success(request, f"Forwarding to {rule.forward_to} turned {'on' if rule.enabled else 'off'}.")
    return redirect("webmail:settings_forwarding")


@require_http_methods(["GET", "POST"])
@owner_required
def settings_forwarding_delete(request, mailbox, rule_id: int):
    rule = _rule_or_404(mailbox, rule_id)
    if request.method == "GET":
        return _page(request, mailbox, "forwarding_delete.html", {"rule": rule})
    forwarding.forwarding_rule_delete(rule=rule)
    messages.success(request, f"Forwarding to {rule.forward_to} removed.")
    return redirect("webmail:settings_forwarding")


# filters


def _filter_or_404(mailbox, filter_id: int) -> MailFilter:
    try:
        return mail_filter_get(mailbox=mailbox, filter_id=filter_id)
    except MailFilter.DoesNotExist:
        raise Http404("No such filter.") from None


def _filter_form(request, mailbox, *, data=None, initial=None) -> FilterForm:
    frame = webmail_frame(request)
    folders = [name for name in (folder.name for folder in frame.folders) if name.upper() != "INBOX"]
    return FilterForm(data, initial=initial, folders=folders, labels=frame.labels)


def _save_filter(form: FilterForm, save) -> bool:
    """Run the service; its field errors land next to the fields. True when saved."""
    if not form.is_valid():
        return False
    try:
        save(form.filter_input())
    except InvalidFields as exc:
        form.add_service_error(exc)
        return False
    except DomainError as exc:  # the mail server could not list the folders
        form.add_error(None, exc.detail)
        return False
    return True


def _filters_context(request, mailbox) -> dict:
    frame = webmail_frame(request)
    return {"filters": list(mail_filter_list(mailbox=mailbox)), "folder_names": frame.folder_names,
            "folders_known": bool(frame.folders)}


@require_http_methods(["GET", "POST"])
@owner_required
def settings_filters(request, mailbox):
    form = _filter_form(request, mailbox, data=request.POST or None)
    if request.method == "POST":
        if _save_filter(form, lambda data: mail_filter_create(mailbox=mailbox, data=data)):
            messages.success(request, "Filter added. It applies to mail arriving from now on.")
            return redirect("webmail:settings_filters")
        return _page(request, mailbox, "filters.html", {"form": form, **_filters_context(request, mailbox)},
                     status=400)
    return _page(request, mailbox, "filters.html", {"form": form, **_filters_context(request, mailbox)})


@require_http_methods(["GET", "POST"])
@owner_required
def settings_filter_edit(request, mailbox, filter_id: int):
    mail_filter = _filter_or_404(mailbox, filter_id)
    form = _filter_form(request, mailbox, data=request.POST or None, initial=FilterForm.initial_for(mail_filter))
    status = 200
    if request.method == "POST":
        if _save_filter(form, lambda data: mail_filter_update(mail_filter=mail_filter, data=data)):
            messages.success(request, "Filter saved.")
            return redirect("webmail:settings_filters")
        status = 400
    return _page(request, mailbox, "filter_edit.html", {"form": form, "mail_filter": mail_filter}, status=status)


@require_http_methods(["GET", "POST"])
@owner_required
def settings_filter_delete(request, mailbox, filter_id: int):
    mail_filter = _filter_or_404(mailbox, filter_id)
    if request.method == "GET":
        return _page(request, mailbox, "filter_delete.html", {"mail_filter": mail_filter})
    mail_filter_delete(mail_filter=mail_filter)
    messages.success(request, "Filter deleted.")
    return redirect("webmail:settings_filters")


@require_POST
@owner_required
def settings_filter_move(request, mailbox, filter_id: int):
    """One place up or down; with htmx only the list comes back, with its status line."""
    mail_filter = _filter_or_404(mailbox, filter_id)
    direction = request.POST.get("direction")
    if direction not in ("up", "down"):
        return _page(request, mailbox, "filters.html", {"form": _filter_form(request, mailbox),
                                                        "status": "Choose up or down.",
                                                        **_filters_context(request, mailbox)}, status=400)
    mail_filter_move(mail_filter=mail_filter, offset=-1 if direction == "up" else 1)
    status = f"Filter moved {direction}."
    if request.htmx:
        return _page(request, mailbox, "filters.html#filter-list",
                     {"status": status, "moved": mail_filter.pk, **_filters_context(request, mailbox)})
    messages.success(request, status)
    return redirect("webmail:settings_filters")


# vacation


@require_http_methods(["GET", "POST"])
@owner_required
def settings_vacation(request, mailbox):
    vacation = vacation_get(mailbox=mailbox)
    form = VacationForm(request.POST or None, initial={
        "enabled": vacation.enabled, "subject": vacation.subject, "body": vacation.body,
        "starts_on": vacation.starts_on, "ends_on": vacation.ends_on, "days": vacation.days})
    if request.method == "POST":
        if form.is_valid():
            try:
                saved = vacation_set(mailbox=mailbox, data=form.vacation_input())
            except InvalidFields as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, "Vacation reply on: senders get it as their mail arrives."
                                 if saved.enabled else "Vacation reply off.")
                return redirect("webmail:settings_vacation")
        return _page(request, mailbox, "vacation.html", {"form": form, "vacation": vacation}, status=400)
    return _page(request, mailbox, "vacation.html", {"form": form, "vacation": vacation})
