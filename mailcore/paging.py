"""The paging rule every list shares (REST, MCP, portal, webmail): bounded page numbers, one window.

A page number is an integer from 1 to MAX_PAGE, so an offset always fits the database's integers;
a page past the end is an empty page with the true total.
"""
from collections.abc import Sequence

MAX_PAGE = 1_000_000


def page_window(rows: Sequence, *, page: int, size: int):
    """The rows of one page (a QuerySet is sliced in SQL as LIMIT/OFFSET)."""
    if not 1 <= page <= MAX_PAGE or size < 1:
        raise ValueError(f"page must be 1 to {MAX_PAGE} and size at least 1")
    start = (page - 1) * size
    return rows[start:start + size]
