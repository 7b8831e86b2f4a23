"""Pay-as-you-go in the portal: retail prices, a pending mailbox's checkout link (copy, or email it to
the customer), the mailbox's subscription (cancel, change plan), and earnings with payouts.

Every change is a billing service call; subscriptions change when the payment provider confirms."""
from collections import defaultdict
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.paginator import Paginator
from django.db.models import Sum
from django.db.models.functions import TruncMonth
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from billing.models import LedgerEntry
from billing.money import Money
from billing.providers.base import ProviderCannot, ProviderRefused, ProviderUnavailable
from billing.selectors.prices import wholesale_monthly
from billing.services import ledger, payg
from portal.partner.access import partner_section
from portal.partner.forms import PortalForm
from portal.partner.mailboxes import mailbox_page
from portal.partner.payg_context import EmailLinkForm, UpgradeForm

PRICING_TEMPLATE = "portal/payg_pricing.html"
EARNINGS_TEMPLATE = "portal/payg_earnings.html"
PLANS = [("pro", "Pro"), ("premium", "Premium")]
CURRENCIES = [("usd", "USD"), ("ngn", "NGN")]


class RetailPriceForm(PortalForm):
    plan_type = forms.ChoiceField(label="Plan", choices=PLANS)
    currency = forms.ChoiceField(label="Currency", choices=CURRENCIES)
    retail_price = forms.DecimalField(label="Price per mailbox and month", min_value=0.01, decimal_places=2,
                                      help_text="What your customer pays; at least the wholesale rate.")


class PayoutForm(PortalForm):
    amount = forms.DecimalField(label="Amount", min_value=0.01, decimal_places=2)
    currency = forms.ChoiceField(label="Currency", choices=CURRENCIES)


def _pricing_rows(partner) -> list[dict]:
    set_prices = {(row["plan_type"], row["currency"]): row for row in payg.retail_prices(partner=partner)}
    rows = []
    for plan, plan_label in PLANS:
        for currency, currency_label in CURRENCIES:
            row = set_prices.get((plan, currency))
            rows.append({"plan": plan_label, "currency": currency_label,
                         "wholesale": wholesale_monthly(plan, currency),
                         "retail": row["retail_price"] if row else None, "margin": row["margin"] if row else None,
                         "is_billing_currency": currency == partner.billing_currency})
    return rows


@require_http_methods(["GET", "POST"])
@partner_section
def retail_pricing(request, partner):
    form = RetailPriceForm(request.POST or None, initial={"currency": partner.billing_currency})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            payg.retail_price_set(partner=partner, plan_type=data["plan_type"], currency=data["currency"],
                                  retail_price=data["retail_price"])
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"{data['plan_type'].title()} now sells at {data['retail_price']} "
                                      f"{data['currency'].upper()} a month.")
            return redirect("portal:retail-pricing")
    return render(request, PRICING_TEMPLATE, {"partner": partner, "rows": _pricing_rows(partner), "form": form},
                  status=422 if form.errors else 200)


# one pay-as-you-go mailbox (shown on the mailbox page)


def _back(partner_mailbox):
    return redirect(reverse("portal:mailbox", kwargs={"mailbox_id": partner_mailbox.pk}) + "#payg")


def _provider_errors(request, call) -> bool:
    try:
        call()
    except (payg.NotAllowedNow, payg.NotPayAsYouGo, payg.NoRetailPrice, ProviderCannot) as exc:
        messages.error(request, exc.detail)
    except (ProviderUnavailable, ProviderRefused) as exc:
        messages.error(request, f"{exc.detail} Nothing changed.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        return True
    return False


@require_POST
@mailbox_page
def payg_email_link(request, partner_mailbox):
    form = EmailLinkForm(request.POST)
    url = payg.payg_checkout_url(partner_mailbox=partner_mailbox)
    if not form.is_valid() or not url:
        messages.error(request, "Enter a valid email address." if url else "This mailbox is already paid for.")
        return _back(partner_mailbox)
    summary = payg.payg_subscription(partner_mailbox=partner_mailbox)
    send_mail(f"Your mailbox {partner_mailbox.mailbox.address} is ready to activate",
              f"Hello,\n\nYour new mailbox {partner_mailbox.mailbox.address} is ready. It costs "
              f"{summary['total_price']} a month. Pay here to switch it on:\n\n{url}\n\n"
              "The mailbox works as soon as the payment is confirmed.\n",
              None, [form.cleaned_data["email"]])
    messages.success(request, f"Checkout link sent to {form.cleaned_data['email']}.")
    return _back(partner_mailbox)


@require_POST
@mailbox_page
def payg_cancel(request, partner_mailbox):
    immediate = request.POST.get("when") == "now"
    if _provider_errors(request, lambda: payg.payg_cancel(partner_mailbox=partner_mailbox, immediate=immediate)):
        messages.success(request, "Cancellation requested; the mailbox is disabled "
                                  f"{'now' if immediate else 'at the end of the paid period'} once the payment "
                                  "provider confirms.")
    return _back(partner_mailbox)


@require_POST
@mailbox_page
def payg_upgrade(request, partner_mailbox):
    form = UpgradeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose pro or premium.")
    elif _provider_errors(request, lambda: payg.payg_upgrade(partner_mailbox=partner_mailbox,
                                                             new_plan_type=form.cleaned_data["new_plan_type"])):
        messages.success(request, "Plan change requested; it applies when the payment provider confirms it.")
    return _back(partner_mailbox)


# earnings


def _monthly_margins(partner, months: int = 12) -> list[dict]:
    since = (timezone.now() - timedelta(days=31 * (months - 1))).replace(day=1, hour=0, minute=0, second=0,
                                                                          microsecond=0)
    rows = (LedgerEntry.objects.filter(partner=partner, kind__in=["margin", "refund"], created_at__gte=since)
            .annotate(month=TruncMonth("created_at")).values("month", "currency")
            .annotate(total=Sum("amount_minor")).order_by("month"))
    by_currency: dict[str, dict] = defaultdict(dict)
    for row in rows:
        by_currency[row["currency"]][row["month"].strftime("%Y-%m")] = row["total"]
    charts = []
    for currency, totals in by_currency.items():
        labels = []
        cursor = since
        for _ in range(months):
            labels.append(cursor.strftime("%Y-%m"))
            cursor = (cursor + timedelta(days=32)).replace(day=1)
        largest = max([value for value in totals.values() if value > 0] or [1])
        charts.append({"currency": currency.upper(), "bars": [
            {"label": timezone.datetime.strptime(label, "%Y-%m").strftime("%b %Y"),
             "count": str(Money(max(totals.get(label, 0), 0), currency)),
             "percent": 100 * max(totals.get(label, 0), 0) / largest, "tone": "primary"} for label in labels]})
    return charts


@require_http_methods(["GET", "POST"])
@partner_section
def earnings(request, partner):
    form = PayoutForm(request.POST or None, initial={"currency": partner.billing_currency})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            minor = payg.to_minor(data["amount"], "amount")
            ledger.payout_request(partner=partner, amount_minor=minor, currency=data["currency"])
        except ValidationError as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Payout of {Money(minor, data['currency'])} requested. We pay it within "
                                      "five working days.")
            return redirect("portal:earnings")
    entries = Paginator(partner.ledger.all(), 25).get_page(request.GET.get("page"))
    context = {"partner": partner, "balances": ledger.balances(partner=partner), "charts": _monthly_margins(partner),
               "entries": entries, "payouts": partner.payouts.all()[:20], "form": form,
               "minimums": {currency.upper(): Money(amount, currency)
                            for currency, amount in ledger.PAYOUT_MINIMUM_MINOR.items()}}
    return render(request, EARNINGS_TEMPLATE, context, status=422 if form.errors else 200)
