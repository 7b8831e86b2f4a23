"""Counting what mailboxes use; one row per mailbox and day, incremented atomically."""
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox
from mailcore.usage.models import MailboxDailyUsage


def _increment(mailbox: Mailbox, field: str, amount: int) -> None:
    today = timezone.now().date()
    rows = MailboxDailyUsage.objects.filter(mailbox=mailbox, date=today)
    if rows.update(**{field: F(field) + amount}):
        return
    try:
        with transaction.atomic():
            MailboxDailyUsage.objects.create(mailbox=mailbox, date=today, **{field: amount})
    except IntegrityError:  # created by a concurrent request
        rows.update(**{field: F(field) + amount})


def usage_count_send(*, mailbox: Mailbox, count: int = 1) -> None:
    _increment(mailbox, "sends", count)


def usage_count_ai_request(*, mailbox: Mailbox) -> None:
    _increment(mailbox, "ai_requests", 1)


def usage_take_ai_request(*, mailbox: Mailbox, limit: int | None) -> bool:
    """Count one AI request if today's count is under `limit` (None: unlimited); one conditional
    UPDATE, so concurrent calls at the limit cannot overshoot. Returns whether it was counted."""
    if limit is None:
        _increment(mailbox, "ai_requests", 1)
        return True
    today = timezone.now().date()
    try:
        with transaction.atomic():
            MailboxDailyUsage.objects.get_or_create(mailbox=mailbox, date=today)
    except IntegrityError:
        pass
    return bool(MailboxDailyUsage.objects.filter(mailbox=mailbox, date=today, ai_requests__lt=limit).update(
        ai_requests=F("ai_requests") + 1))


class AiRequestsExhausted(DomainError):
    code = ErrorCode.RATE_LIMITED


def ai_request_take(*, mailbox: Mailbox) -> None:
    """Count one of the mailbox's AI requests today, or raise AiRequestsExhausted (retry after 00:00 UTC)."""
    plan = mailbox.effective_plan
    if usage_take_ai_request(mailbox=mailbox, limit=plan.ai_requests_per_day):
        return
    now = timezone.now()
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    raise AiRequestsExhausted(
        f"{mailbox.address} has used its {plan.ai_requests_per_day} AI requests for today ({plan.name} plan); "
        "the count resets at 00:00 UTC.", retry_after=max(1, int((midnight - now).total_seconds())))
