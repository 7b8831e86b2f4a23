"""Reads of API keys, always scoped to the caller's account."""
from datetime import timedelta

from django.db.models import QuerySet, Sum
from django.utils import timezone

from mailcore.accounts.models import Account
from mailcore.apikeys import usage
from mailcore.apikeys.models import ApiKey, ApiKeyDailyUsage

USAGE_DAYS = 30


def api_key_list(*, account: Account) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(account=account)


def api_key_get(*, account: Account, key_id: int) -> ApiKey:
    """Another account's key does not exist for this caller (ApiKey.DoesNotExist)."""
    return ApiKey.objects.get(account=account, pk=key_id)


def api_key_usage(*, key: ApiKey) -> dict:
    """Request counts for today, the last 7 and 30 days, and each of the last 30 days."""
    usage.usage_flush()
    today = timezone.now().date()
    first = today - timedelta(days=USAGE_DAYS - 1)
    counts = dict(
        ApiKeyDailyUsage.objects.filter(api_key=key, date__gte=first, date__lte=today).values_list("date", "count")
    )
    daily = [{"date": first + timedelta(days=n), "count": counts.get(first + timedelta(days=n), 0)} for n in range(USAGE_DAYS)]
    return {
        "today": counts.get(today, 0),
        "last_7_days": sum(day["count"] for day in daily[-7:]),
        "last_30_days": sum(day["count"] for day in daily),
        "daily": daily,
    }


def api_key_requests_total(*, account: Account) -> int:
    usage.usage_flush()
    return ApiKeyDailyUsage.objects.filter(api_key__account=account).aggregate(total=Sum("count"))["total"] or 0
