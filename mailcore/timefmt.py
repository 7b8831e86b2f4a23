"""The one way a moment is written in API records and event data: ISO 8601 in UTC with a Z."""
from datetime import datetime


def iso(moment: datetime | None, *, timespec: str = "auto") -> str | None:
    """`2026-03-04T05:06:07.123456Z` (or to the second with timespec="seconds"); None stays None."""
    if moment is None:
        return None
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")
