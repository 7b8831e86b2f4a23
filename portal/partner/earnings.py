"""The earnings page: a partner's margins on pay-as-you-go payments. Balances per currency (available,
reserved by payout requests, paid out), margins by month for the last 12 months, the ledger 25 entries
a page, the payout requests, and a form to request one.

It calls the same ledger services as /v1/hosting/partners/me/payouts: the service refuses an amount
below the minimum or above the available balance, and the page shows why next to the amount."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from billing.money import Money
from billing.selectors.history import partner_customer_payments
from billing.selectors.ledger import ledger_monthly_margins, month_starts
from billing.services.ledger import PAYOUT_MINIMUM_MINOR, balances, payout_request
from mailcore.errors import InvalidFields
from portal.htmx import regions
from portal.partner.access import partner_required
from portal.partner.forms import PayoutRequestForm

TEMPLATE = "portal/payg_earnings.html"
PAGE_SIZE = 25
CUSTOMER_PAYMENTS_SHOWN = 25
MONTHS = 12

partner_section = partner_required(section="Earnings")


def signed(money: Money) -> str:
    """+$5.50 for a credit, −$20.00 for a debit."""
    return f"{'−' if money.minor < 0 else '+'}{Money(abs(money.minor), money.currency)}"


def _monthly_margins(partner, months: int = MONTHS) -> list[dict]:
    """Per currency earned in: net margins by month, as rows for components/bar_list.html."""
    starts = month_starts(timezone.localdate(), months)
    totals = ledger_monthly_margins(partner=partner, starts=starts)
    charts = []
    for currency in sorted(totals):
        by_month = totals[currency]
        largest = max([value for value in by_month.values() if value > 0] or [1])
        charts.append({
            "currency": currency.upper(),
            "total": Money(sum(by_month.values()), currency),
            "bars": [{"label": start.strftime("%b %Y"), "count": str(Money(by_month.get(start, 0), currency)),
                      "percent": 100 * max(by_month.get(start, 0), 0) / largest, "tone": "primary"}
                     for start in starts],
        })
    return charts


def _context(partner, request, form) -> dict:
    page = Paginator(partner.ledger.all(), PAGE_SIZE).get_page(request.GET.get("page"))
    return {
        "partner": partner,
        "form": form,
        "balances": balances(partner=partner),
        "charts": _monthly_margins(partner),
        "page": page,
        "entries": [{"entry": entry, "amount": signed(entry.amount)} for entry in page.object_list],
        "payouts": list(partner.payouts.all()),
        "minimum": Money(PAYOUT_MINIMUM_MINOR[partner.billing_currency], partner.billing_currency),
        "customer_payments": [{"payment": payment, "amount": Money(int(payment.amount_minor), payment.currency),
                               "mailbox": payment.purchase.partner_mailbox}
                              for payment in partner_customer_payments(partner=partner)[:CUSTOMER_PAYMENTS_SHOWN]],
    }


@require_http_methods(["GET", "POST"])
@partner_section
def earnings(request, partner):
    form = PayoutRequestForm(request.POST if request.method == "POST" else None, partner=partner)
    if request.method == "POST" and form.is_valid():
        amount = Money(form.cleaned_data["amount"], form.cleaned_data["currency"])
        try:
            payout_request(partner=partner, amount_minor=amount.minor, currency=amount.currency)
        except InvalidFields as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"Payout of {amount} requested. It is reserved from your balance until we "
                                      "pay it.")
            return redirect("portal:earnings")
    if request.htmx and request.htmx.target == "ledger":  # the ledger's page links
        return regions(request, TEMPLATE, ["ledger"], _context(partner, request, form))
    return render(request, TEMPLATE, _context(partner, request, form), status=422 if form.errors else 200)
