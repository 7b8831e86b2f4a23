"""Counting what mailboxes use; one row per mailbox and day, incremented atomically."""
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

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
