"""The UTC stamps of time-range, expand and limit-recurrence-set (RFC 4791 9.9), and the open ends they default to."""
from datetime import UTC, datetime

FAR_PAST = datetime(1900, 1, 1, tzinfo=UTC)
FAR_FUTURE = datetime(2200, 1, 1, tzinfo=UTC)


def utc_stamp(value: str | None, default: datetime | None) -> datetime | None:
    if not value:
        return default
    try:
        return datetime.strptime(value.strip(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return default
