"""Daily and hourly send quotas, reserved with one conditional UPDATE each so that concurrent
requests can never both take the last unit (the database decides, not a read-then-write).

A send counts on the day and in the hour it is due to go out, and is reserved when it is accepted:
a scheduled send that fits today's quota of its day is never refused later."""
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from mailcore.errors import DomainError, ErrorCode
from mailcore.mailboxes.models import Mailbox
from mailcore.usage.models import MailboxDailyUsage, MailboxHourlySends


class SendQuotaExceeded(DomainError):
    code = ErrorCode.RATE_LIMITED


class HourlySendLimitReached(SendQuotaExceeded):
    """The hour's allowance, not the day's, ran out: worth trying again within the day."""


def _take(model, limit: int, count: int, **key) -> bool:
    """Add `count` to the period's row if it stays within `limit`: one conditional UPDATE. Only when
    it changes nothing (the period's first send, or a refusal) is the row created and the UPDATE
    tried once more."""
    def update() -> int:
        return model.objects.filter(**key, sends__lte=limit - count).update(sends=F("sends") + count)

    if update():
        return True
    try:
        with transaction.atomic():
            model.objects.get_or_create(**key)
    except IntegrityError:  # created concurrently
        pass
    return bool(update())


def _seconds_until(moment: datetime, now: datetime) -> int:
    return max(1, int((moment - now).total_seconds()))


def quota_reserve(*, mailbox: Mailbox, at: datetime | None = None, count: int = 1) -> None:
    """Take `count` sends from the allowance of the day and hour the mail goes out (`at`, default
    now), or raise SendQuotaExceeded. A send scheduled for next month counts on that day, not today.

    Within a transaction, a refusal spoils it (no savepoint of its own, two round trips fewer): a
    caller that goes on after catching it needs its own atomic block, as mail_send has."""
    plan = mailbox.effective_plan
    now = timezone.now()
    at = max(at or now, now)
    hour = at.replace(minute=0, second=0, microsecond=0)
    later = at.date() != now.date()
    with transaction.atomic(savepoint=False):
        if not _take(MailboxDailyUsage, plan.sends_per_day, count, mailbox=mailbox, date=at.date()):
            midnight = (hour + timedelta(days=1)).replace(hour=0)
            raise SendQuotaExceeded(
                f"{mailbox.address} already has {plan.sends_per_day} sends booked for {at.date().isoformat()}, "
                f"its daily quota ({plan.name} plan)." if later else
                f"{mailbox.address} has used its daily quota of {plan.sends_per_day} sends "
                f"({plan.name} plan); it resets at 00:00 UTC.",
                retry_after=_seconds_until(midnight, now),
            )
        if not _take(MailboxHourlySends, plan.sends_per_hour, count, mailbox=mailbox, hour=hour):
            raise HourlySendLimitReached(
                f"{mailbox.address} already has {plan.sends_per_hour} sends booked for the hour from "
                f"{hour.isoformat().replace('+00:00', 'Z')}, its hourly limit ({plan.name} plan)." if hour > now else
                f"{mailbox.address} has used its hourly limit of {plan.sends_per_hour} sends "
                f"({plan.name} plan); try again after the hour.",
                retry_after=_seconds_until(hour + timedelta(hours=1), now),
            )


def quota_release(*, mailbox: Mailbox, at: datetime, count: int = 1) -> None:
    """Give back sends reserved for the day and hour `at` by a message cancelled before it went out."""
    hour = at.replace(minute=0, second=0, microsecond=0)
    MailboxDailyUsage.objects.filter(mailbox=mailbox, date=at.date(), sends__gte=count).update(
        sends=F("sends") - count
    )
    MailboxHourlySends.objects.filter(mailbox=mailbox, hour=hour, sends__gte=count).update(sends=F("sends") - count)
