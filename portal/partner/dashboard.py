"""The dashboard: the account's plan and counts, and for a working hosting partner its figures,
charts and what needs attention (computed here, from one stats selector)."""
from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone

from mailcore.accounts.models import Plan
from mailcore.accounts.selectors import account_overview
from mailcore.partners.lifecycle import NOTICE_AHEAD
from mailcore.partners.mailboxes import PARTNER_PLANS
from mailcore.partners.models import HostingPartner, PartnerMailbox
from mailcore.partners.selectors import (
    account_has_feature,
    partner_client_count,
    partner_mailboxes_ending_soon,
    partner_stats,
)
from portal.partner.dns_wizard import dns_summary
from portal.partner.forms import storage_label


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
    counts = account_overview(account=account)
    hosting = partner_dashboard(partner) if partner is not None and partner.is_operational else None
    context = {
        "features": [(label, account_has_feature(account=account, feature=feature))
                     for feature, label in Plan.FEATURES.items()],
        "quotas": quotas,
        "counts": counts,
        "partner": partner,
        # A working partner's figures, charts and to-dos (portal.partner.dashboard).
        "hosting": hosting,
        # Domains (and so mailboxes) come with the partner programme: only a working partner adds them,
        # and an account keeps the ones it already has.
        "domains_open": hosting is not None or bool(counts["domains"]),
    }
    return render(request, "portal/dashboard.html", context)


# the partner's figures, charts and to-dos


@dataclass
class Bar:
    label: str
    count: int
    percent: float
    tone: str


def _bars(counts: list[tuple[str, int, str]]) -> list[Bar]:
    """Bars scaled to the largest value, so a small count is still visible beside a big one."""
    largest = max([count for _, count, _ in counts] + [1])
    return [Bar(label, count, round(100 * count / largest, 1), tone) for label, count, tone in counts]


def _parts(counts: list[tuple[str, int, str]]) -> dict:
    """Segments of one stacked bar (shares of the total), each with its x offset in a 0-100 box."""
    total = sum(count for _, count, _ in counts)
    offset, parts = 0.0, []
    for label, count, tone in counts:
        width = round(100 * count / total, 2) if total else 0
        parts.append({"label": label, "count": count, "x": offset, "width": width, "tone": tone,
                      "percent": round(width)})
        offset = round(offset + width, 2)
    return {"total": total, "parts": parts}


STATUS_TONES = {"trial": "info", "active": "ok", "expired": "muted", "suspended": "danger",
                "pending_payment": "warn"}


def partner_dashboard(partner: HostingPartner) -> dict:
    """The partner's figures, charts and what needs attention, in a fixed number of queries."""
    stats = partner_stats(partner=partner)
    now = timezone.now()
    expiring = partner_mailboxes_ending_soon(partner=partner, within=NOTICE_AHEAD)
    for partner_mailbox in expiring:
        partner_mailbox.overdue = partner_mailbox.expires_at <= now  # the sweep lapses it within the minute
    by_status = stats["mailboxes_by_status"]
    by_plan = stats["mailboxes_by_plan"]
    domains_free = max(stats["domain_limit"] - stats["domains_total"], 0)
    pending_domains = [{**row, **vars(dns_summary(row["dns_records"] or []))} for row in stats["pending_domain_setup"]]
    return {
        "stats": stats,
        "clients_total": partner_client_count(partner=partner),
        "slots_total": stats["slots_unused"] + stats["slots_assigned"],
        "domains_free": domains_free,
        "by_status": _bars([(label, by_status.get(value, 0), STATUS_TONES[value])
                            for value, label in PartnerMailbox.Status.choices]),
        "by_plan": _bars([(plan.title(), by_plan.get(plan, 0), "primary") for plan in PARTNER_PLANS]),
        "slots": _parts([("In use", stats["slots_assigned"], "primary"), ("Free", stats["slots_unused"], "ok")]),
        "domains": _parts([("Verified", stats["domains_verified"], "ok"),
                           ("Awaiting DNS", stats["domains_pending"] + stats["domains_failed"], "warn"), ("Free", domains_free, "muted")]),
        "pending_domains": pending_domains,
        "expiring": expiring,
        "attention_count": len(pending_domains) + len(expiring),
        "notice_days": NOTICE_AHEAD.days,
    }
