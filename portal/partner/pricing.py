"""The retail prices page: what a partner's customers pay per pay-as-you-go mailbox and month, per
plan and currency, beside our wholesale rate and the margin the partner keeps; a form sets one.

It calls the same billing service as POST /v1/hosting/retail-pricing; a price below the wholesale
rate is refused there and shown next to the price field, naming the rate."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from billing.money import Money
from billing.selectors.prices import wholesale_monthly
from billing.services.payg import retail_price_set, retail_prices
from mailcore.errors import InvalidFields
from portal.partner.access import partner_required
from portal.partner.forms import PLAN_CHOICES, RetailPriceForm

TEMPLATE = "portal/payg_pricing.html"

partner_section = partner_required(section="Retail prices")


def _rows(partner) -> list[dict]:
    """Every plan and currency: wholesale, the partner's price (or None) and the margin."""
    prices = {(row["plan_type"], row["currency"]): row for row in retail_prices(partner=partner)}
    rows = []
    for plan, plan_name in PLAN_CHOICES:
        for currency in (partner.billing_currency,):  # customers pay in it; the other currency is not offered
            row = prices.get((plan, currency))
            rows.append({"plan": plan, "plan_name": plan_name, "currency": currency,
                         "wholesale": wholesale_monthly(plan, currency),
                         "retail": row["retail_price"] if row else None, "margin": row["margin"] if row else None,
                         "billing_currency": currency == partner.billing_currency})
    return rows


@require_http_methods(["GET", "POST"])
@partner_section
def retail_pricing(request, partner):
    """GET ?plan_type=&currency= fills the form for that row (the table's Set and Change links)."""
    source = request.POST if request.method == "POST" else None
    form = RetailPriceForm(source, partner=partner, initial={"plan_type": request.GET.get("plan_type", "pro")})
    if request.method == "POST" and form.is_valid():
        plan, currency, minor = (form.cleaned_data[name] for name in ("plan_type", "currency", "retail_price"))
        try:
            retail_price_set(partner=partner, plan_type=plan, currency=currency, retail_price=Money(minor, currency).major)
        except InvalidFields as exc:
            if "retail_price" in exc.message_dict:
                wholesale = wholesale_monthly(plan, currency)
                form.add_error("retail_price", f"At least the wholesale rate for {plan.title()} in "
                                               f"{currency.upper()}: {wholesale} a month.")
            else:
                form.add_service_error(exc)
        else:
            price = Money(minor, currency)
            margin = Money(minor - wholesale_monthly(plan, currency).minor, currency)
            messages.success(request, f"{plan.title()} mailboxes now cost your customers {price} a month; you keep "
                                      f"{margin} of each payment.")
            return redirect("portal:retail-pricing")
    context = {"partner": partner, "rows": _rows(partner), "form": form}
    return render(request, TEMPLATE, context, status=422 if form.errors else 200)
