"""Per-key daily request counts without a write per request.

Each process counts in memory and adds its counts to the daily rows at most every
API_KEY_USAGE_FLUSH_SECONDS, so a busy key costs one UPDATE per interval per process instead of
one per request on the same hot row. Counts still buffered in another process show up within
one interval; they are informational, not billing.
"""
import atexit
import threading
import time
from collections import Counter
from datetime import date

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

_lock = threading.Lock()
_pending: Counter[tuple[int, date]] = Counter()
_last_flush = time.monotonic()


def usage_record(key_id: int) -> None:
    global _last_flush
    with _lock:
        _pending[(key_id, timezone.now().date())] += 1
        due = time.monotonic() - _last_flush >= settings.API_KEY_USAGE_FLUSH_SECONDS
    if due:
        usage_flush()


def usage_flush() -> None:
    """Add this process's buffered counts to the database."""
    global _last_flush
    from mailcore.apikeys.models import ApiKeyDailyUsage

    with _lock:
        batch = dict(_pending)
        _pending.clear()
        _last_flush = time.monotonic()
    try:
        for (key_id, day), delta in batch.items():
            _add(ApiKeyDailyUsage, key_id, day, delta)
    except Exception:
        with _lock:  # keep what was not written for the next flush
            _pending.update(batch)
        raise


def _add(model, key_id: int, day: date, delta: int) -> None:
    if model.objects.filter(api_key_id=key_id, date=day).update(count=F("count") + delta):
        return
    try:
        with transaction.atomic():
            model.objects.create(api_key_id=key_id, date=day, count=delta)
    except IntegrityError:  # another process created the row first
        model.objects.filter(api_key_id=key_id, date=day).update(count=F("count") + delta)


def _flush_at_exit() -> None:
    try:
        usage_flush()
    except Exception:
        pass


atexit.register(_flush_at_exit)
