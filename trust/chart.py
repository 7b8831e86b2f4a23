"""The trend chart's geometry: one column per day, aligned messages below, failing ones stacked on
top, scaled to the busiest day; the template draws it as inline SVG (no script, CSP-safe)."""
from dataclasses import dataclass

from trust.selectors import DayFigures

WIDTH, HEIGHT = 600, 160
GAP = 2


@dataclass(frozen=True)
class Column:
    day: str
    x: float
    width: float
    aligned_y: float
    aligned_height: float
    failed_y: float
    failed_height: float
    label: str  # the column's tooltip and accessible text


def trend_columns(days: list[DayFigures]) -> list[Column]:
    if not days:
        return []
    peak = max((day.messages for day in days), default=0) or 1
    width = WIDTH / len(days)
    columns = []
    for index, day in enumerate(days):
        aligned_height = HEIGHT * day.aligned / peak
        failed_height = HEIGHT * day.failed / peak
        columns.append(Column(
            day=day.day.isoformat(), x=round(index * width + GAP / 2, 2), width=round(max(width - GAP, 1), 2),
            aligned_y=round(HEIGHT - aligned_height, 2), aligned_height=round(aligned_height, 2),
            failed_y=round(HEIGHT - aligned_height - failed_height, 2), failed_height=round(failed_height, 2),
            label=f"{day.day:%d %b}: {day.messages} messages, {day.aligned} aligned, {day.failed} failing"))
    return columns
