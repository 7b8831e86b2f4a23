"""The mailbox usage record of the spec (GET /mail/mailbox-usage)."""
from django.utils import timezone

from mailcore.mailboxes.models import Mailbox
from mailcore.store.factory import store_for
from mailcore.usage.models import MailboxDailyUsage


def _percentage(used: float, limit: float) -> float:
    return round(100 * used / limit, 2) if limit else 0.0


def mailbox_usage(*, mailbox: Mailbox) -> dict:
    plan = mailbox.effective_plan
    today = MailboxDailyUsage.objects.filter(mailbox=mailbox, date=timezone.now().date()).first()
    sent, ai_used = (today.sends, today.ai_requests) if today else (0, 0)
    used_mb = round(store_for(mailbox).storage_used() / (1024 * 1024), 3)
    ai_limit = plan.ai_requests_per_day
    return {
        "email": mailbox.address,
        "plan": plan.code,
        "storage": {"used_mb": used_mb, "limit_mb": mailbox.quota_mb, "percentage": _percentage(used_mb, mailbox.quota_mb)},
        "emails_today": {"sent": sent, "limit": plan.sends_per_day, "percentage": _percentage(sent, plan.sends_per_day)},
        "ai_today": {
            "used": ai_used,
            "limit": ai_limit or 0,
            "unlimited": ai_limit is None,
            "percentage": 0.0 if ai_limit is None else _percentage(ai_used, ai_limit),
        },
    }

