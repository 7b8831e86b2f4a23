"""Segment filters: which of a book's contacts a campaign reaches, as JSON compiled to ORM queries
(never SQL text). A filter is a list of conditions that must all hold; a condition is one of

    {"field": "company", "op": "contains", "value": "bakery"}
    {"in_group": 12}                    (a group of the same book)       {"not_in_group": 12}
    {"any": [condition, ...]}           {"all": [condition, ...]}        {"not": condition}

Fields: name, email, company, phone, notes (text ops: equals, not_equals, contains, not_contains,
starts_with, ends_with, is_empty, is_not_empty) and created_at (before, after: an ISO 8601 date or
datetime). At most MAX_CONDITIONS conditions and MAX_DEPTH levels."""
from datetime import UTC, datetime

from django.db.models import Q
from django.utils.dateparse import parse_date, parse_datetime

TEXT_FIELDS = ("name", "email", "company", "phone", "notes")
TEXT_OPS = ("equals", "not_equals", "contains", "not_contains", "starts_with", "ends_with", "is_empty", "is_not_empty")
DATE_FIELDS = ("created_at",)
DATE_OPS = ("before", "after")
MAX_CONDITIONS = 50
MAX_DEPTH = 4


class SegmentError(ValueError):
    pass


def _moment(value) -> datetime:
    if isinstance(value, str):
        moment = parse_datetime(value)
        if moment is None and (day := parse_date(value)) is not None:
            moment = datetime(day.year, day.month, day.day)
        if moment is not None:
            return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    raise SegmentError(f"{value!r} is not an ISO 8601 date or datetime.")


def _text(field: str, op: str, value) -> Q:
    if op in ("is_empty", "is_not_empty"):
        empty = Q(**{field: ""})
        return empty if op == "is_empty" else ~empty
    if not isinstance(value, str) or not value or len(value) > 320:
        raise SegmentError(f"{field} {op} needs a text value of 1 to 320 characters.")
    lookup = {"equals": "iexact", "not_equals": "iexact", "contains": "icontains", "not_contains": "icontains",
              "starts_with": "istartswith", "ends_with": "iendswith"}[op]
    query = Q(**{f"{field}__{lookup}": value})
    return ~query if op.startswith("not_") else query


class _Compiler:
    def __init__(self, group_ids: set[int]):
        self.group_ids = group_ids
        self.count = 0

    def condition(self, item, depth: int) -> Q:
        self.count += 1
        if self.count > MAX_CONDITIONS:
            raise SegmentError(f"A segment may have at most {MAX_CONDITIONS} conditions.")
        if depth > MAX_DEPTH:
            raise SegmentError(f"A segment may nest at most {MAX_DEPTH} levels.")
        if not isinstance(item, dict) or len(item) == 0:
            raise SegmentError("Each condition is an object.")
        keys = set(item)
        if keys in ({"any"}, {"all"}):
            items = item.get("any", item.get("all"))
            if not isinstance(items, list) or not items:
                raise SegmentError("any/all take a non-empty list of conditions.")
            parts = [self.condition(part, depth + 1) for part in items]
            combined = parts[0]
            for part in parts[1:]:
                combined = (combined | part) if "any" in keys else (combined & part)
            return combined
        if keys == {"not"}:
            return ~self.condition(item["not"], depth + 1)
        if keys in ({"in_group"}, {"not_in_group"}):
            group = item.get("in_group", item.get("not_in_group"))
            if not isinstance(group, int) or isinstance(group, bool) or group not in self.group_ids:
                raise SegmentError(f"Unknown group {group!r}.")
            query = Q(groups__id=group)
            return query if "in_group" in keys else ~query
        if keys in ({"field", "op", "value"}, {"field", "op"}):
            field, op = item["field"], item["op"]
            if field in TEXT_FIELDS and op in TEXT_OPS:
                return _text(field, op, item.get("value"))
            if field in DATE_FIELDS and op in DATE_OPS:
                return Q(**{f"{field}__{'lt' if op == 'before' else 'gte'}": _moment(item.get("value"))})
            raise SegmentError(f"Unknown field or operator: {field!r} {op!r}.")
        raise SegmentError(f"Not a condition: {sorted(keys)}.")


def segment_query(segment, *, group_ids: set[int]) -> Q:
    """The Q of a segment filter (an empty one matches everyone); SegmentError says what is wrong."""
    if segment in (None, []):
        return Q()
    if not isinstance(segment, list):
        raise SegmentError("segment_filter is a list of conditions.")
    compiler = _Compiler(group_ids)
    query = Q()
    for item in segment:
        query &= compiler.condition(item, 1)
    return query
