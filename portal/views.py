"""Portal pages: they call mailcore selectors and render; no logic of their own."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from mailcore.accounts.models import Plan
from mailcore.accounts.selectors import account_overview
from portal.forms import storage_label
from portal.views_partner import partner_dashboard


@login_required
def dashboard(request):
    account = request.user.account
    plan = account.plan
    quotas = [
        ("Sends a day", f"{plan.sends_per_day:,}"),
        ("Sends an hour", f"{plan.sends_per_hour:,}"),
        ("Storage per mailbox", storage_label(plan.storage_mb)),
        ("AI requests a day", "Unlimited" if plan.ai_requests_per_day is None else f"{plan.ai_requests_per_day:,}"),
        ("Attachments per message", storage_label(plan.attachment_max_mb)),
    ]
    partner = getattr(account, "partner", None)
    context = {
        "features": [(label, plan.has_feature(feature)) for feature, label in Plan.FEATURES.items()],
        "quotas": quotas,
        "counts": account_overview(account=account),
        "partner": partner,
        # A working partner's figures, charts and to-dos (portal.views_partner).
        "hosting": partner_dashboard(partner) if partner is not None and partner.is_operational else None,
    }
    return render(request, "portal/dashboard.html", context)
