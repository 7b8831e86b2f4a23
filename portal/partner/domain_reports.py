"""A client domain's DMARC and TLS report dashboard in the partner portal: volume by source, SPF,
DKIM and alignment, the trend chart, TLS sessions, the policy advisor, recent alerts, and the switch
of the monthly report to the client. The same selectors and services as /v1/hosting/domains/{id}/dmarc
and /monthly-report."""
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from mailcore.domains.models import Domain
from mailcore.errors import InvalidFields
from portal.partner.access import partner_section
from portal.partner.domains import domain_of
from portal.partner.forms import MonthlyReportForm
from trust.advisor import RULE, policy_advice
from trust.chart import HEIGHT, WIDTH, trend_columns
from trust.selectors import dmarc_summary, domain_dmarc_alerts, domain_tls_reports, monthly_report_get
from trust.services import monthly_report_set

TEMPLATE = "portal/domains_reports.html"


def _context(domain: Domain, form: MonthlyReportForm | None = None) -> dict:
    summary = dmarc_summary(domain=domain)
    setting = monthly_report_get(domain=domain)
    return {"domain": domain, "summary": summary, "advice": policy_advice(summary), "rule": RULE,
            "columns": trend_columns(summary.days), "chart_width": WIDTH, "chart_height": HEIGHT,
            "alerts": list(domain_dmarc_alerts(domain=domain)[:10]),
            "tls_reports": list(domain_tls_reports(domain=domain)[:10]),
            "form": form or MonthlyReportForm(initial={"enabled": setting.enabled, "send_to": setting.send_to})}


@require_GET
@partner_section
def domain_reports(request, partner, domain_id: int):
    return render(request, TEMPLATE, _context(domain_of(partner, domain_id)))


@require_POST
@partner_section
def domain_monthly_report(request, partner, domain_id: int):
    domain = domain_of(partner, domain_id)
    form = MonthlyReportForm(request.POST)
    if form.is_valid():
        try:
            setting = monthly_report_set(domain=domain, **form.cleaned_data)
        except InvalidFields as exc:
            form.add_service_error(exc)
        else:
            messages.success(request, f"The monthly report goes to {setting.send_to} from next month on."
                             if setting.enabled else "The monthly report is off.")
            return redirect("portal:domain-reports", domain_id=domain.pk)
    return render(request, TEMPLATE, _context(domain, form), status=400)
