"""Portal pages for a hosting partner's client mailboxes: the list with filters, create (from a slot,
or pay-as-you-go), and one mailbox's page (status, plan, storage, identity, forwarding, aliases) with
renew and delete. A pay-as-you-go mailbox's page has its checkout link while it waits for the first
payment (copy it, or email it to the customer), then its subscription (cancel, change plan): changes
are requests to the payment provider and apply when its signed event confirms them.

They call the same mailcore.partners and mailcore.mailboxes services and selectors as the JSON API
(/v1/hosting/mailboxes). A request made by htmx gets back only the region it swaps (plus the flash
messages, out of band); without JavaScript every POST redirects, or re-renders the page with its
errors. Accounts that are not hosting partners see the become-a-partner page; another partner's
mailbox, rule or alias is 404.
"""
from functools import wraps
from smtplib import SMTPException

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.mail import send_mail
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from mailcore.errors import InvalidFields
from mailcore.mailboxes import aliases, forwarding
from mailcore.mailboxes.models import Alias, ForwardingRule
from mailcore.mailboxes.services import mailbox_set_identity
from billing.providers.base import ProviderCannot, ProviderRefused, ProviderUnavailable
from billing.services.payg import (
    NoRetailPrice,
    NotAllowedNow,
    NotPayAsYouGo,
    open_checkout,
    payg_cancel,
    payg_checkout_url,
    payg_last_declined,
    payg_subscription,
    payg_upgrade,
    retail_prices,
)
from billing.selectors.history import partner_slot_pool
from billing.services.mailboxes import (
    NoSlotAvailable,
    partner_mailbox_open,
    partner_mailbox_remove,
    partner_mailbox_renew_from_pool,
)
from mailcore.partners import mailboxes as partner_mailbox_services
from mailcore.partners.models import PartnerMailbox
from mailcore.partners.selectors import (
    mailbox_aliases,
    mailbox_forwarding_rules,
    partner_client_choices,
    partner_domain_choices,
    partner_domains,
    partner_mailbox_get,
    partner_mailboxes,
    partner_summary,
)
from mailcore.store.base import StoreError
from mailcore.throttle import ActionThrottled
from mailcore.usage.selectors import mailbox_usage
from portal.forms import ForwardingRuleEnabledForm, ForwardingRuleForm, MailboxIdentityForm
from portal.partner.forms import (
    PAY_AS_YOU_GO,
    AliasForm,
    CheckoutLinkEmailForm,
    MailboxFilterForm,
    PartnerMailboxForm,
    PlanChangeForm,
    SubscriptionCancelForm,
)
from portal.access import found_or_404
from portal.partner.access import become_partner_page, partner_required
from portal.htmx import regions
from portal.partner.billing import PROVIDER_NAMES

LIST_TEMPLATE = "portal/mailboxes.html"
NEW_TEMPLATE = "portal/mailboxes_new.html"
DETAIL_TEMPLATE = "portal/mailboxes_detail.html"
CONFIRM_TEMPLATE = "portal/mailboxes_confirm.html"
CANCEL_TEMPLATE = "portal/mailboxes_cancel.html"
PAGE_SIZE = 50
SEARCH_MAX = 100  # characters of an address search; an address is at most 320


partner_section = partner_required(section="Mailboxes", htmx_redirect="portal:mailboxes")


def mailbox_page(view):
    """One of the partner's mailboxes; anyone else's is 404, and so is every mailbox for a non-partner."""

    @login_required
    @wraps(view)
    def wrapped(request, mailbox_id: int, *args, **kwargs):
        partner = getattr(request.user.account, "partner", None)
        if partner is None:
            raise Http404("No such mailbox.")
        if not partner.is_operational:
            return become_partner_page(request, partner, section="Mailboxes", htmx_redirect="portal:mailboxes")
        partner_mailbox = found_or_404(partner_mailbox_get, "mailbox", partner=partner, mailbox_id=mailbox_id)
        return view(request, partner_mailbox, *args, **kwargs)

    return wrapped


def _detail_url(partner_mailbox: PartnerMailbox, anchor: str = "") -> str:
    url = reverse("portal:mailbox", kwargs={"mailbox_id": partner_mailbox.pk})
    return f"{url}#{anchor}" if anchor else url


def _size(mb: float) -> str:
    if mb >= 1024:
        return f"{mb / 1024:.1f}".removesuffix(".0") + " GB"
    return f"{mb:.1f}".removesuffix(".0") + " MB"


def _usage(partner_mailbox: PartnerMailbox) -> dict | None:
    try:
        usage = mailbox_usage(mailbox=partner_mailbox.mailbox)
    except StoreError:
        return None  # the mail store is unreachable: the page says so instead of failing
    storage = usage["storage"]
    return {**usage, "storage_used": _size(storage["used_mb"]), "storage_limit": _size(storage["limit_mb"]),
            "storage_bar": min(100.0, storage["percentage"]),
            "sent_today": f"{usage['emails_today']['sent']:,} of {usage['emails_today']['limit']:,}",
            "ai_today": (f"{usage['ai_today']['used']:,} (no limit)" if usage["ai_today"]["unlimited"]
                         else f"{usage['ai_today']['used']:,} of {usage['ai_today']['limit']:,}")}


def _retail_prices(partner) -> dict:
    """The partner's pay-as-you-go price per plan in its billing currency (the one its mailboxes are sold in)."""
    return {row["plan_type"]: row["retail_price"] for row in retail_prices(partner=partner)
            if row["currency"] == partner.billing_currency}


def _checkout_link(partner_mailbox: PartnerMailbox) -> tuple[str | None, bool]:
    """A working checkout link (a fresh one when the provider let the last expire), and whether the
    provider could be asked; when it could not, the stored link."""
    try:
        return payg_checkout_url(partner_mailbox=partner_mailbox), True
    except (ProviderUnavailable, ProviderRefused):
        return getattr(open_checkout(partner_mailbox), "checkout_url", None), False


def _payg_context(partner_mailbox: PartnerMailbox, forms: dict) -> dict:
    """The pay-as-you-go card: the subscription (or the pending offer), the checkout link, the forms."""
    if partner_mailbox.funding_mode != PAY_AS_YOU_GO:
        return {}
    subscription = payg_subscription(partner_mailbox=partner_mailbox)
    context = {
        "payg": subscription,
        "payg_provider": PROVIDER_NAMES.get(subscription["payment_provider"], subscription["payment_provider"]),
        "email_form": forms.get("email_form") or CheckoutLinkEmailForm(),
        "cancel_form": SubscriptionCancelForm(),
        "plan_form": PlanChangeForm(current=subscription["plan_type"],
                                    retail_prices=_retail_prices(partner_mailbox.partner)),
        "email_sent_to": forms.get("email_sent_to"),
    }
    if partner_mailbox.status == PartnerMailbox.Status.PENDING_PAYMENT:
        context["declined"] = payg_last_declined(partner_mailbox=partner_mailbox)
        context["checkout_url"], context["checkout_checked"] = _checkout_link(partner_mailbox)
    return context


def _detail_context(partner_mailbox: PartnerMailbox, **forms) -> dict:
    mailbox = partner_mailbox.mailbox
    return {
        "partner_mailbox": partner_mailbox,
        "mailbox": mailbox,
        "usage": _usage(partner_mailbox),
        "rules": list(mailbox_forwarding_rules(partner_mailbox=partner_mailbox)),
        "aliases": list(mailbox_aliases(partner_mailbox=partner_mailbox)),
        "identity_form": forms.get("identity_form") or MailboxIdentityForm(
            initial={"display_name": mailbox.display_name, "signature_html": mailbox.signature_html}),
        "forwarding_form": forms.get("forwarding_form") or ForwardingRuleForm(),
        "alias_form": forms.get("alias_form") or AliasForm(),
        "identity_saved": forms.get("identity_saved", False),
        **_payg_context(partner_mailbox, forms),
    }


def _region_response(request, partner_mailbox: PartnerMailbox, region: str | list[str], ok: bool,
                     **forms) -> HttpResponse:
    """htmx: the region (and any others, out of band) and the messages. Without JavaScript: back to
    the page on success, or the page with the form's errors."""
    names = [region] if isinstance(region, str) else region
    region = names[0]
    if request.htmx:
        partner_mailbox.refresh_from_db()  # a provider's event may have changed it already (local provider)
        return regions(request, DETAIL_TEMPLATE, names, _detail_context(partner_mailbox, **forms))
    if ok:
        return redirect(_detail_url(partner_mailbox, region))
    return render(request, DETAIL_TEMPLATE, _detail_context(partner_mailbox, **forms))


# the list


def _options(field) -> SafeString:
    """A filter's <option>s, written here rather than by the widget's template once per option: a
    partner with a thousand domains would otherwise spend most of the page's time on them."""
    current = "" if field.value() is None else str(field.value())
    return mark_safe("".join(
        f'<option value="{escape(value)}"{" selected" if str(value) == current else ""}>{escape(label)}</option>'
        for value, label in field.field.choices))


@require_GET
@partner_section
def mailboxes(request, partner):
    """The partner's mailboxes, newest first, found by part of the address and filtered by status,
    client and domain, 50 a page."""
    filter_form = MailboxFilterForm(request.GET, clients=partner_client_choices(partner=partner),
                                    domains=partner_domain_choices(partner=partner),
                                    statuses=PartnerMailbox.Status.choices)
    filters = filter_form.filters()
    search = request.GET.get("q", "").strip()[:SEARCH_MAX]
    rows = partner_mailboxes(partner=partner, status=filters.get("status"), client_id=filters.get("client"),
                             domain_id=filters.get("domain"), search=search
                             ).select_related("mailbox__domain__client")
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    summary = partner_summary(partner=partner)
    context = {
        "filter_fields": [(field, _options(field)) for field in filter_form],
        "search": search,
        "filtered": bool(filters or search),
        "page": page,
        "query": query.urlencode(),
        "summary": summary,
        "has_verified_domain": summary["domains_verified"] > 0,
    }
    if request.htmx and request.htmx.target == "mailboxes":  # the filters and the page links
        return regions(request, LIST_TEMPLATE, ["mailboxes", "mailboxes-count"], context)
    return render(request, LIST_TEMPLATE, context)


# create


def _slot_shortage(partner, plan_id: str, plan_names: dict) -> dict:
    """Why a slot-funded mailbox of `plan_id` cannot be created, naming the plans that do have unused
    slots (the pool is kept per plan, so "no slot" alone contradicts the unused total beside the form)."""
    name = plan_names.get(plan_id, plan_id.title())
    others = [{"plan_type": row["plan_type"], "name": plan_names.get(row["plan_type"], row["plan_type"].title()),
               "unused": row["unused"]}
              for row in partner_slot_pool(partner=partner) if row["unused"] and row["plan_type"] not in ("", plan_id)]
    text = f"You have no unused {name} slot, so this {name} mailbox was not created."
    if others:
        having = " and ".join(f"{row['name']} ({row['unused']} unused)" for row in others)
        text += f" Your unused slots are for {having}: create the mailbox on that plan, or buy {name} slots."
    else:
        text += f" Buy {name} slots, or delete a mailbox you no longer need to free its slot."
    return {"plan_type": plan_id, "name": name, "others": others, "text": text}


@require_http_methods(["GET", "POST"])
@partner_section
def mailbox_new(request, partner):
    """The create form; errors come back next to their fields and nothing is created."""
    domains = list(partner_domains(partner=partner).select_related("client"))
    prices = _retail_prices(partner)
    # GET ?plan_id=&funding_mode= preselects (the links beside pay-as-you-go, and the htmx refresh below).
    initial = {"domain": request.GET.get("domain"), "plan_id": request.GET.get("plan_id") or "pro",
               "funding_mode": request.GET.get("funding_mode") or "slot"}
    if initial["plan_id"] not in prices:
        initial["funding_mode"] = "slot"
    form = PartnerMailboxForm(request.POST if request.method == "POST" else None, domains=domains,
                              retail_prices=prices, initial=initial)
    if request.method == "GET" and request.htmx and request.htmx.target == "mailbox-funding":
        return regions(request, NEW_TEMPLATE, ["mailbox-funding"], {"form": form})  # the plan changed
    shortage = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        domain = next(domain for domain in domains if domain.pk == data["domain"])
        try:
            created = partner_mailbox_open(
                partner=partner, domain=domain, local_part=data["local_part"], password=data["password"],
                plan_id=data["plan_id"], display_name=data["display_name"], funding_mode=data["funding_mode"],
                # The customer's browser comes back to this public page after paying.
                return_url=settings.PUBLIC_BASE_URL.rstrip("/") + reverse("checkout-thanks"))
        except NoRetailPrice:
            form.add_error("funding_mode", f"Pay-as-you-go needs a retail price for the "
                                           f"{form.plan_names.get(data['plan_id'], data['plan_id'])} plan in "
                                           f"{partner.billing_currency.upper()}. Set one on the Retail prices "
                                           "page first.")
        except (ProviderUnavailable, ProviderRefused) as exc:
            form.add_error(None, f"{exc.detail} Nothing was created.")
        except InvalidFields as exc:
            form.add_service_error(exc)
        except partner_mailbox_services.DomainNotVerified:
            form.add_error("domain", f"{domain.name} is not verified yet. Publish its DNS records and verify it "
                                     "before creating mailboxes on it.")
        except partner_mailbox_services.MailboxExists:
            form.add_error("local_part", f"{data['local_part'].strip().lower()}@{domain.name} already exists.")
        except NoSlotAvailable:
            shortage = _slot_shortage(partner, data["plan_id"], form.plan_names)
            form.add_error(None, shortage["text"])
        else:
            if created.status == "pending_payment":
                messages.success(request, f"Mailbox {created.mailbox.address} created. It switches on when your "
                                          "customer pays: send them the checkout link below.")
            else:
                messages.success(request, f"Mailbox {created.mailbox.address} created. Send its owner the address "
                                          "and the password you chose.")
            url = _detail_url(created)
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    # slots bought for no plan get their own row, so the rows add up to the unused total
    pool = [{**row, "name": form.plan_names.get(row["plan_type"], row["plan_type"].title()) if row["plan_type"]
             else "Any plan"} for row in partner_slot_pool(partner=partner)]
    context = {"form": form, "summary": partner_summary(partner=partner), "partner": partner, "retail_prices": prices,
               "pool": pool,
               "slot_shortage": shortage}
    if request.htmx and request.method == "POST":
        return regions(request, NEW_TEMPLATE, ["mailbox-form"], context)
    return render(request, NEW_TEMPLATE, context)


# one mailbox


@require_GET
@mailbox_page
def mailbox_detail(request, partner_mailbox):
    return render(request, DETAIL_TEMPLATE, _detail_context(partner_mailbox))


@require_POST
@mailbox_page
def mailbox_renew(request, partner_mailbox):
    """One slot term more from the end of the term (or from now once lapsed), paid from the pool."""
    try:
        renewed = partner_mailbox_renew_from_pool(partner_mailbox=partner_mailbox)
    except NoSlotAvailable as exc:
        messages.error(request, exc.detail)
        return _region_response(request, partner_mailbox, "mailbox-status", ok=False)
    messages.success(request, f"{renewed.mailbox.address} renewed until {renewed.expires_at:%-d %B %Y}.")
    return _region_response(request, renewed, "mailbox-status", ok=True)


@require_http_methods(["GET", "POST"])
@mailbox_page
def mailbox_delete(request, partner_mailbox):
    """GET asks for confirmation (without JavaScript); POST deletes and frees the slot."""
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "action": "delete"})
    address, pending = partner_mailbox.mailbox.address, partner_mailbox.status == "pending_payment"
    slot_funded = partner_mailbox.funding_mode == PartnerMailbox.Funding.SLOT
    partner_mailbox_remove(partner_mailbox=partner_mailbox)
    messages.success(request, f"Mailbox {address} deleted. " + (
        "Its slot is free for another mailbox." if slot_funded else
        "Its account is deleted too and its checkout link no longer works." if pending else
        "Its subscription ends now."))
    url = reverse("portal:mailboxes")
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# pay-as-you-go


def _provider_call(request, call) -> bool:
    """Run a request to the payment provider; False (with the reason as a message) when refused."""
    try:
        call()
    except NoRetailPrice:
        messages.error(request, "That plan has no retail price in your currency yet. Set one on the Retail prices "
                                "page first.")
    except (NotAllowedNow, NotPayAsYouGo, ProviderCannot) as exc:
        messages.error(request, f"{exc.detail[:1].upper()}{exc.detail[1:]}.")
    except (ProviderUnavailable, ProviderRefused) as exc:
        messages.error(request, f"{exc.detail} Nothing changed.")
    except InvalidFields as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        return True
    return False


PAYG_REGIONS = ["payg", "mailbox-status"]


def payg_mailbox_page(view):
    """One of the partner's pay-as-you-go mailboxes: a slot-funded one has no subscription here (404)."""

    @mailbox_page
    @wraps(view)
    def wrapped(request, partner_mailbox, *args, **kwargs):
        if partner_mailbox.funding_mode != PAY_AS_YOU_GO:
            raise Http404("This mailbox is paid from a slot: it has no pay-as-you-go subscription.")
        return view(request, partner_mailbox, *args, **kwargs)

    return wrapped


@require_POST
@payg_mailbox_page
def mailbox_checkout_email(request, partner_mailbox):
    """Email the checkout link to the customer (plain text: the address, the monthly price, the link)."""
    form = CheckoutLinkEmailForm(request.POST)
    if not form.is_valid():
        return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=False, email_form=form)
    address, to = partner_mailbox.mailbox.address, form.cleaned_data["email"]
    url = None
    if partner_mailbox.status == PartnerMailbox.Status.PENDING_PAYMENT:
        url, _ = _checkout_link(partner_mailbox)
    if not url:
        messages.error(request, f"{address} is paid for already: there is no checkout link to send.")
        return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=False)
    price = payg_subscription(partner_mailbox=partner_mailbox)["total_price"]
    partner_name = partner_mailbox.partner.account.name
    try:
        send_mail(
            f"Your mailbox {address}: pay to switch it on",
            f"Hello,\n\n{partner_name} has set up the mailbox {address} for you. It costs {price} a month.\n\n"
            f"Pay here to switch it on:\n{url}\n\n"
            "The mailbox works as soon as the payment is confirmed. Unpaid, it is deleted on "
            f"{partner_mailbox.expires_at:%-d %B %Y}.\n",
            None, [to])
    except (SMTPException, OSError):
        form.add_error("email", "The email could not be sent just now. Try again in a minute, or copy the link.")
        return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=False, email_form=form)
    messages.success(request, f"Sent to {to}.")
    return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=True, email_sent_to=to)


@require_http_methods(["GET", "POST"])
@payg_mailbox_page
def mailbox_subscription_cancel(request, partner_mailbox):
    """GET asks for confirmation (without JavaScript; ?when=period_end or now); POST asks the provider
    to cancel, and the mailbox turns expired when it confirms."""
    form = SubscriptionCancelForm(request.POST if request.method == "POST" else request.GET or None)
    immediate = form.is_valid() and form.cleaned_data["when"] == "now"
    if request.method == "GET":
        return render(request, CANCEL_TEMPLATE, {"partner_mailbox": partner_mailbox, "immediate": immediate,
                                                 "payg": payg_subscription(partner_mailbox=partner_mailbox)})
    if not form.is_valid():
        messages.error(request, "Choose when the subscription ends: at the end of the paid period, or now.")
        return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=False)
    if _provider_call(request, lambda: payg_cancel(partner_mailbox=partner_mailbox, immediate=immediate)):
        when = "now" if immediate else "at the end of the paid period"
        messages.success(request, f"Requested; the subscription ends {when} when the payment provider confirms it.")
    return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=True)


@require_POST
@payg_mailbox_page
def mailbox_plan_change(request, partner_mailbox):
    """Ask the provider to move the subscription to another plan (prorated there)."""
    form = PlanChangeForm(request.POST, current=partner_mailbox.plan_type,
                          retail_prices=_retail_prices(partner_mailbox.partner))
    if not form.is_valid():
        messages.error(request, "Choose the plan to change to.")
    elif _provider_call(request, lambda: payg_upgrade(partner_mailbox=partner_mailbox,
                                                      new_plan_type=form.cleaned_data["new_plan_type"])):
        messages.success(request, "Requested; the change applies when the payment provider confirms it.")
    return _region_response(request, partner_mailbox, PAYG_REGIONS, ok=True)


@require_POST
@mailbox_page
def mailbox_identity(request, partner_mailbox):
    """The name and signature outgoing mail carries; the signature is sanitized by the service."""
    form = MailboxIdentityForm(request.POST)
    ok = form.is_valid()
    if ok:
        mailbox_set_identity(mailbox=partner_mailbox.mailbox, **form.cleaned_data)
        messages.success(request, "Identity saved. New mail from this mailbox uses it.")
        form = None  # the saved (sanitized) values, not what was typed
    return _region_response(request, partner_mailbox, "identity", ok, identity_form=form, identity_saved=ok)


# forwarding


def _rule(partner_mailbox: PartnerMailbox, rule_id: int) -> ForwardingRule:
    return found_or_404(mailbox_forwarding_rules(partner_mailbox=partner_mailbox).get, "forwarding rule", pk=rule_id)


@require_POST
@mailbox_page
def mailbox_forwarding(request, partner_mailbox):
    """Add a rule; it forwards nothing until its target confirms through the mailed link."""
    mailbox = partner_mailbox.mailbox
    form = ForwardingRuleForm(request.POST)
    ok = form.is_valid()
    if ok:
        try:
            rule = forwarding.forwarding_rule_create(mailbox=mailbox, email=mailbox.address, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        except forwarding.ConfirmationNotSent:
            form.add_error(None, "The confirmation mail could not be sent, so no rule was added. Try again in a "
                                 "minute.")
        except ActionThrottled as exc:
            form.add_error(None, exc.detail)
        else:
            messages.success(request, f"We emailed {rule.forward_to} a confirmation link. Mail is forwarded once "
                                      "they confirm.")
            form = None
        ok = form is None
    return _region_response(request, partner_mailbox, "forwarding", ok, forwarding_form=form)


@require_POST
@mailbox_page
def mailbox_forwarding_enabled(request, partner_mailbox, rule_id: int):
    """Turn a rule on or off: the form says which, so a double submit does not flip it back."""
    rule = _rule(partner_mailbox, rule_id)
    form = ForwardingRuleEnabledForm(request.POST)
    form.is_valid()  # one optional boolean: always valid
    rule = forwarding.forwarding_rule_set_enabled(rule=rule, enabled=form.cleaned_data["enabled"])
    state = "on" if rule.enabled else "off"
    messages.success(request, f"Forwarding to {rule.forward_to} turned {state}.")
    return _region_response(request, partner_mailbox, "forwarding", ok=True)


@require_http_methods(["GET", "POST"])
@mailbox_page
def mailbox_forwarding_delete(request, partner_mailbox, rule_id: int):
    rule = _rule(partner_mailbox, rule_id)
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "action": "delete-rule",
                                                  "rule": rule})
    forwarding.forwarding_rule_delete(rule=rule)
    messages.success(request, f"Forwarding to {rule.forward_to} removed.")
    return _region_response(request, partner_mailbox, "forwarding", ok=True)


# aliases


def _alias(partner_mailbox: PartnerMailbox, alias_id: int) -> Alias:
    return found_or_404(mailbox_aliases(partner_mailbox=partner_mailbox).get, "alias", pk=alias_id)


@require_POST
@mailbox_page
def mailbox_aliases_add(request, partner_mailbox):
    form = AliasForm(request.POST)
    if form.is_valid():
        try:
            alias = aliases.alias_create(mailbox=partner_mailbox.mailbox,
                                         alias_address=form.cleaned_data["alias_address"])
        except InvalidFields as exc:
            form.add_service_error(exc)
        except aliases.AliasTaken as exc:
            form.add_error("alias_address", f"{exc}: a mailbox or another alias has it.")
        else:
            messages.success(request, f"Alias {alias.address} added: mail to it arrives in this mailbox.")
            form = None
    return _region_response(request, partner_mailbox, "aliases", form is None, alias_form=form)


@require_http_methods(["GET", "POST"])
@mailbox_page
def mailbox_alias_delete(request, partner_mailbox, alias_id: int):
    alias = _alias(partner_mailbox, alias_id)
    if request.method == "GET":
        return render(request, CONFIRM_TEMPLATE, {"partner_mailbox": partner_mailbox, "action": "delete-alias",
                                                  "alias": alias})
    aliases.alias_delete(alias=alias)
    messages.success(request, f"Alias {alias.address} removed. Mail to it is no longer delivered here.")
    return _region_response(request, partner_mailbox, "aliases", ok=True)
