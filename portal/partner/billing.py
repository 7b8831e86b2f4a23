"""Portal billing: the account's plan (compare, upgrade, downgrade), its payments with printable
receipts, a hosting partner's slot pool and add-on purchases, and the page that waits for the
payment provider to confirm a purchase.

They call the same billing services as the JSON API (/subscriptions/me/plan, /v1/hosting/slots/purchase,
/v1/hosting/addons/purchase). A purchase opens a checkout at the provider and the browser goes there;
what it buys is granted only when the provider's event confirms it (billing.services.events). Every
portal purchase comes back through /portal/billing/return/, which finds the purchase the provider
names among the caller's own and shows its waiting page: never a redirect anywhere else. Another
account's purchase or payment is 404.
"""
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from billing.models import Purchase
from billing.money import Money
from billing.providers.base import ProviderRefused, ProviderUnavailable
from billing.selectors.history import (
    account_payment_get,
    account_payments,
    account_payments_declined,
    account_purchase_get,
    account_purchase_returned,
    account_purchases_unsettled,
    partner_slot_pool,
)
from billing.selectors.prices import PriceMissing, plan_prices, price
from billing.services.events import purchase_sync
from billing.services.partners import (
    MAX_MONTHS,
    MAX_QUANTITY,
    MethodNotOffered,
    addon_pricing,
    addon_purchase_start,
    pool_purchase_start,
)
from billing.services.plans import SamePlan, plan_change, plan_subscription
from mailcore.accounts.models import Account, Plan
from mailcore.errors import InvalidFields
from mailcore.partners.models import HostingPartner
from mailcore.partners.selectors import partner_grants_feature
from portal.form_redirects import allow_form_redirects, provider_checkout_origins
from portal.htmx import regions
from portal.access import found_or_404
from portal.partner.access import partner_required
from portal.forms import PortalForm
from portal.partner.forms import storage_label

BILLING_TEMPLATE = "portal/billing.html"
PURCHASE_TEMPLATE = "portal/billing_purchase.html"
RECEIPT_TEMPLATE = "portal/billing_receipt.html"
SLOTS_TEMPLATE = "portal/billing_slots.html"
ADDONS_TEMPLATE = "portal/billing_addons.html"
PAGE_SIZE = 20

PROVIDER_DOWN = "The payment provider did not answer; nothing was charged. Try again in a minute."
PROVIDER_REFUSED = "The payment provider refused the request; nothing was charged. Try again later, or write to us."
METHOD_NOT_OFFERED = "Bank transfer is offered only to accounts billed in NGN. Pay by card."
PROVIDER_NAMES = {"local": "Local test provider", "stripe": "Stripe", "paystack": "Paystack"}
PLAN_CODES = ("free", "pro", "premium")


# forms: they parse what people type; the billing services decide what may be bought


class PurchaseForm(PortalForm):
    quantity = forms.IntegerField(label="Quantity", widget=forms.NumberInput(
        attrs={"min": 1, "max": MAX_QUANTITY, "inputmode": "numeric"}))
    # Both methods parse; the service refuses a bank transfer to an account not billed in NGN.
    payment_method = forms.ChoiceField(label="Pay by", choices=Purchase.Method.choices, initial=Purchase.Method.CARD,
                                       widget=forms.RadioSelect)

    def __init__(self, data=None, *, partner: HostingPartner, **kwargs):
        super().__init__(data, **kwargs)
        self.bank_transfer_offered = partner.billing_currency == HostingPartner.Currency.NGN

    def offered_methods(self):
        """The radio buttons to show: bank transfer only where it is offered."""
        return [radio for radio in self["payment_method"]
                if self.bank_transfer_offered or radio.data["value"] != Purchase.Method.BANK_TRANSFER]


class SlotPoolForm(PurchaseForm):
    field_order = ["plan_type", "quantity", "months", "payment_method"]

    plan_type = forms.ChoiceField(label="Plan", choices=[("pro", "Pro"), ("premium", "Premium")], initial="pro",
                                  widget=forms.RadioSelect)
    months = forms.TypedChoiceField(
        label="Term of each slot", coerce=int, initial=1,
        choices=[(n, "1 month" if n == 1 else f"{n} months") for n in range(1, MAX_MONTHS + 1)],
        help_text="How long each slot keeps one mailbox running.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["quantity"].label = "Slots"
        self.fields["quantity"].initial = 10
        self.fields["quantity"].help_text = f"How many to add to your pool, 1 to {MAX_QUANTITY:,}. Each funds one mailbox."


class AddonForm(PurchaseForm):
    field_order = ["addon_type", "quantity", "payment_method"]

    addon_type = forms.ChoiceField(label="Add-on", choices=[("domain_slot", "Domain slots"),
                                                            ("storage", "Extra storage")],
                                   initial="domain_slot", widget=forms.RadioSelect)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["quantity"].initial = 1
        self.fields["quantity"].help_text = "Domain slots, or gigabytes of storage."


# helpers


def _money(amount_minor: int, currency: str) -> Money:
    return Money(int(amount_minor), currency)


def _return_url(request) -> str:
    """Where the provider's page sends the buyer back to: the return view finds the purchase."""
    return request.build_absolute_uri(reverse("portal:billing-return"))


def _to_checkout(request, purchase: Purchase) -> HttpResponse:
    if request.htmx:
        return HttpResponseClientRedirect(purchase.checkout_url)
    return redirect(purchase.checkout_url)


def _buying_page(response: HttpResponse) -> HttpResponse:
    """A page whose form is answered with a redirect to the provider's checkout (see portal.form_redirects)."""
    return allow_form_redirects(response, provider_checkout_origins())


def _price_or_none(item: str, currency: str) -> Money | None:
    try:
        return price(item, currency)
    except PriceMissing:
        return None


def _int(value, default: int, low: int, high: int) -> int | None:
    """A live total's figure from the query string: the default when absent, None when not usable."""
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high else None


# the plan and the payments


def _plan_currency(account: Account, subscription) -> str:
    if subscription is not None:
        return subscription.currency
    partner = getattr(account, "partner", None)
    return partner.billing_currency if partner is not None else "usd"


def _feature_label(label: str, on_plan: bool, granted: bool) -> str:
    return f"{label} (with your partner account)" if granted and not on_plan else label


def _plan_rows(account: Account, subscription, currency: str) -> list[dict]:
    prices = plan_prices(currency)
    current = account.plan
    cancelling = bool(subscription and subscription.cancel_at_period_end)
    granted = {feature for feature in Plan.FEATURES if partner_grants_feature(account=account, feature=feature)}
    rows = []
    for plan in Plan.objects.filter(code__in=PLAN_CODES).order_by("rank"):
        if plan.code == current.code:
            action = "resume" if cancelling and plan.code != "free" else "current"
        elif plan.code == "free":
            # Free follows the end of the subscription; a plan not paid by one is changed by us.
            action = "scheduled" if cancelling else ("downgrade" if subscription else "unavailable")
        else:
            action = "upgrade" if plan.rank > current.rank else "downgrade"
        rows.append({
            "plan": plan,
            "price": None if plan.code == "free" else prices.get(plan.code),
            "action": action,
            "features": [(_feature_label(label, plan.has_feature(feature), feature in granted),
                          plan.has_feature(feature) or feature in granted)
                         for feature, label in Plan.FEATURES.items()],
            "quotas": [
                ("Sends a day", f"{plan.sends_per_day:,}"),
                ("Storage per mailbox", storage_label(plan.storage_mb)),
                ("AI requests a day",
                 "Unlimited" if plan.ai_requests_per_day is None else f"{plan.ai_requests_per_day:,}"),
                ("Attachments", storage_label(plan.attachment_max_mb)),
            ],
        })
    return rows


def _billing_context(request, **extra) -> dict:
    account = request.user.account
    subscription = plan_subscription(account)
    currency = _plan_currency(account, subscription)
    partner = getattr(account, "partner", None)
    payments = Paginator(account_payments(account=account), PAGE_SIZE).get_page(request.GET.get("page"))
    payments.object_list = list(payments.object_list)
    unsettled = account_purchases_unsettled(account=account)
    declined = account_payments_declined(account=account)
    for row in [*payments.object_list, *unsettled, *declined]:
        row.amount = _money(row.amount_minor, row.currency)
    for row in declined:
        row.retry_url = (reverse("portal:mailbox", kwargs={"mailbox_id": row.partner_mailbox_id})
                         if row.partner_mailbox_id else reverse(TRY_AGAIN.get(row.kind, "portal:billing")))
    return {
        "subscription": subscription,
        "subscription_amount": _money(subscription.amount_minor, subscription.currency) if subscription else None,
        "currency": currency,
        "plans": _plan_rows(account, subscription, currency),
        "payments": payments,
        "unsettled": unsettled,
        "declined": declined,
        "partner": partner,
        "pool_buyer": partner is not None and (partner.is_operational
                                               or partner.status == HostingPartner.Status.EXPIRED),
        **extra,
    }


@require_GET
@login_required
def billing(request):
    response = render(request, BILLING_TEMPLATE, _billing_context(request))
    return _buying_page(response)


@require_POST
@login_required
def plan_change_view(request):
    """From Free: the subscription's checkout. Otherwise the provider changes or cancels the
    subscription, and the plan follows its confirmation."""
    account = request.user.account
    code = request.POST.get("plan", "")
    provider_error = ""
    try:
        started = plan_change(account=account, plan_code=code, return_url=_return_url(request),
                               currency=_plan_currency(account, plan_subscription(account)))
    except InvalidFields:
        messages.error(request, "Choose Free, Pro or Premium.")
    except SamePlan:
        messages.error(request, f"You are on the {account.plan.name} plan already.")
    except PriceMissing:
        messages.error(request, "That plan has no price in your currency yet, so it can't be bought. Nothing was "
                                "charged; write to us and we'll set it up.")
    except ProviderUnavailable:
        provider_error = PROVIDER_DOWN
    except ProviderRefused:
        provider_error = PROVIDER_REFUSED
    else:
        if started is not None:
            return _to_checkout(request, started)
        messages.success(request, "Requested; your plan changes when the payment provider confirms it.")
    if request.htmx:
        account.refresh_from_db()
        return regions(request, BILLING_TEMPLATE, ["plans", "plan-current"],
                       _billing_context(request, provider_error=provider_error))
    if provider_error:
        return _buying_page(render(request, BILLING_TEMPLATE, _billing_context(request, provider_error=provider_error),
                                   status=502))
    return redirect(f"{reverse('portal:billing')}#plans")


@require_GET
@login_required
def receipt(request, payment_id: int):
    payment = found_or_404(account_payment_get, "payment", account=request.user.account, payment_id=payment_id)
    return render(request, RECEIPT_TEMPLATE, {
        "payment": payment,
        "amount": _money(payment.amount_minor, payment.currency),
        "provider_name": PROVIDER_NAMES.get(payment.provider, payment.provider.title()),
    })


# waiting for the provider


ONWARD = {
    Purchase.Kind.SLOT_POOL: [("Create a mailbox", "portal:mailbox-new"), ("See your mailboxes", "portal:mailboxes")],
    Purchase.Kind.DOMAIN_SLOT: [("Add a domain", "portal:domains"), ("Back to add-ons", "portal:billing-addons")],
    Purchase.Kind.STORAGE: [("Go to your domains", "portal:domains"), ("Back to add-ons", "portal:billing-addons")],
    Purchase.Kind.PLAN: [("See your plan", "portal:billing")],
}
TRY_AGAIN = {
    Purchase.Kind.SLOT_POOL: "portal:billing-slots",
    Purchase.Kind.DOMAIN_SLOT: "portal:billing-addons",
    Purchase.Kind.STORAGE: "portal:billing-addons",
    Purchase.Kind.PLAN: "portal:billing",
}


@require_GET
@login_required
def purchase(request, reference: str):
    """What was bought and where it stands. While pending, each visit (and htmx's poll every 2 s)
    re-fetches the checkout from the provider first, so a late webhook does not keep the buyer waiting."""
    bought = found_or_404(account_purchase_get, "purchase", account=request.user.account, reference=reference)
    provider_silent = False
    if bought.status == Purchase.Status.PENDING:
        try:
            purchase_sync(bought)
        except (ProviderUnavailable, ProviderRefused):
            provider_silent = True  # still pending: the next poll asks again
        bought.refresh_from_db()
        request.user.account.refresh_from_db()  # a plan purchase changes the plan the page shows
    context = {
        "purchase": bought,
        "amount": _money(bought.amount_minor, bought.currency),
        "provider_name": PROVIDER_NAMES.get(bought.provider, bought.provider.title()),
        "onward": [(label, reverse(name)) for label, name in ONWARD.get(bought.kind, [("See your mailboxes", "portal:mailboxes")])],
        "try_again": reverse(TRY_AGAIN.get(bought.kind, "portal:mailboxes")),
        "provider_silent": provider_silent,
        "payment": bought.payments.order_by("paid_at", "id").first(),
    }
    if request.htmx and request.htmx.target == "purchase-status":
        return regions(request, PURCHASE_TEMPLATE, ["purchase-status", "purchase-details"], context)
    return render(request, PURCHASE_TEMPLATE, context)


@require_GET
@login_required
def purchase_return(request):
    """Back from the provider's page: the waiting page of the purchase it names (ours or the
    provider's reference), among the caller's own only; no reference means the latest one."""
    reference = request.GET.get("reference", "")[:128]
    try:
        bought = account_purchase_returned(account=request.user.account, reference=reference)
    except Purchase.DoesNotExist:
        if reference:
            raise Http404("No such purchase.") from None
        return redirect("portal:billing")
    return redirect("portal:purchase", reference=bought.reference)


# a partner's slot pool and add-ons


slots_section = partner_required(section="Mailbox slots", htmx_redirect="portal:billing-slots", expired_too=True)
addons_section = partner_required(section="Add-ons", htmx_redirect="portal:billing-addons")


def _slot_total(partner: HostingPartner, data) -> dict:
    """The live total under the form: what the checkout will ask, from what is typed so far."""
    plan_type = data.get("plan_type") or "pro"
    quantity = _int(data.get("quantity"), 10, 1, MAX_QUANTITY)
    months = _int(data.get("months"), 1, 1, MAX_MONTHS)
    unit = _price_or_none(f"slot:{plan_type}", partner.billing_currency) if plan_type in ("pro", "premium") else None
    if unit is None:
        return {"total": None, "unpriced": True}
    if quantity is None or months is None:
        return {"total": None}
    term = "1 month" if months == 1 else f"{months} months"
    return {"total": _money(unit.minor * months * quantity, unit.currency),
            "breakdown": f"{quantity:,} × {unit} × {term}"}


def _slots_context(partner: HostingPartner, form: SlotPoolForm, **extra) -> dict:
    currency = partner.billing_currency
    pool = partner_slot_pool(partner=partner)
    return {
        "partner": partner,
        "form": form,
        "pool": pool,
        "unused_total": sum(row["unused"] for row in pool),
        "slot_prices": {"pro": _price_or_none("slot:pro", currency), "premium": _price_or_none("slot:premium", currency)},
        "order": _slot_total(partner, form.data if form.is_bound else form.initial),
        **extra,
    }


@require_http_methods(["GET", "POST"])
@slots_section
def slots(request, partner):
    """Buy a slot pool: open to an expired partner too, whose account is active again once it is paid."""
    if request.method == "GET" and request.htmx and request.htmx.target == "slot-total":
        return render(request, f"{SLOTS_TEMPLATE}#slot-total", {"order": _slot_total(partner, request.GET)})
    chosen = request.GET.get("plan_type")  # preselected by "Buy Pro slots" where a mailbox lacked one
    form = SlotPoolForm(request.POST if request.method == "POST" else None, partner=partner,
                        initial={"plan_type": chosen} if chosen in ("pro", "premium") else None)
    provider_error = ""
    if request.method == "POST" and form.is_valid():
        bought, provider_error = _purchase_start(form, "This plan's slots have no price", lambda: pool_purchase_start(
            partner=partner, return_url=_return_url(request), **form.cleaned_data))
        if bought is not None:
            return _to_checkout(request, bought)
    return _form_answer(request, SLOTS_TEMPLATE, "slot-form", _slots_context(partner, form, provider_error=provider_error))


def _addon_total(partner: HostingPartner, data, pricing: dict | None) -> dict:
    addon_type = data.get("addon_type") or "domain_slot"
    quantity = _int(data.get("quantity"), 1, 1, MAX_QUANTITY)
    if pricing is None:
        return {"total": None, "unpriced": True}
    if quantity is None or addon_type not in ("domain_slot", "storage"):
        return {"total": None}
    unit = pricing["domain_slot_unit_price" if addon_type == "domain_slot" else "storage_gb_unit_price"]
    what = "domain slot" if addon_type == "domain_slot" else "GB"
    return {"total": _money(unit.minor * quantity, unit.currency), "breakdown": f"{quantity:,} × {unit} a {what}"}


def _addon_pricing(partner: HostingPartner) -> dict | None:
    try:
        return addon_pricing(partner=partner)
    except PriceMissing:
        return None


def _addons_context(partner: HostingPartner, form: AddonForm, **extra) -> dict:
    pricing = _addon_pricing(partner)
    return {
        "partner": partner,
        "form": form,
        "pricing": pricing,
        "extra_storage": storage_label(partner.extra_storage_mb) if partner.extra_storage_mb else "None",
        "order": _addon_total(partner, form.data if form.is_bound else {}, pricing),
        **extra,
    }


@require_http_methods(["GET", "POST"])
@addons_section
def addons(request, partner):
    """Buy domain slots or extra storage; granted when the provider confirms the payment."""
    if request.method == "GET" and request.htmx and request.htmx.target == "addon-total":
        return render(request, f"{ADDONS_TEMPLATE}#addon-total",
                      {"order": _addon_total(partner, request.GET, _addon_pricing(partner))})
    form = AddonForm(request.POST if request.method == "POST" else None, partner=partner)
    provider_error = ""
    if request.method == "POST" and form.is_valid():
        bought, provider_error = _purchase_start(form, "This add-on has no price", lambda: addon_purchase_start(
            partner=partner, return_url=_return_url(request), **form.cleaned_data))
        if bought is not None:
            return _to_checkout(request, bought)
    return _form_answer(request, ADDONS_TEMPLATE, "addon-form", _addons_context(partner, form,
                                                                                provider_error=provider_error))


def _purchase_start(form, unpriced: str, start) -> tuple:
    """Run a purchase service for a bound, valid form: (the purchase, "") or (None, why the provider
    failed), with the service's refusals put on the form."""
    try:
        return start(), ""
    except InvalidFields as exc:
        form.add_service_error(exc)
    except MethodNotOffered:
        form.add_error("payment_method", METHOD_NOT_OFFERED)
    except PriceMissing:
        form.add_error(None, f"{unpriced} in your currency yet. Nothing was charged; write to us and we'll set "
                             "it up.")
    except ProviderUnavailable:
        return None, PROVIDER_DOWN
    except ProviderRefused:
        return None, PROVIDER_REFUSED
    return None, ""


def _form_answer(request, template: str, region: str, context: dict) -> HttpResponse:
    """The page (or, for htmx, its form region) again: with the form's errors, or the provider's
    silence (502 without JavaScript; htmx only swaps a 2xx answer)."""
    if request.htmx and request.method == "POST":
        return regions(request, template, [region], context)
    status = 502 if context.get("provider_error") else 200
    return _buying_page(render(request, template, context, status=status))
