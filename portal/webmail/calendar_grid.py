"""The days of the calendar's month, week and day views with the occurrences placed in them: one chip
per occurrence and day (its time and link), a month cell's first few chips and "+N more", and the
hour grid of the week and day views, where overlapping events sit side by side in lanes."""
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from calendars.selectors import PlacedOccurrence, occurrences_between

MONTH_CHIPS = 3  # chips a month cell shows before "+N more"


@dataclass
class Chip:
    """One occurrence as a view shows it (in one day, for the week and day grids)."""
    placed: PlacedOccurrence
    url: str
    label: str  # its time ("09:00", "All day")
    top: float = 0  # week/day grid: percent of the day from the top, height, lane of overlapping events
    height: float = 0
    lane: int = 0
    lanes: int = 1

    @property
    def title(self) -> str:
        return self.placed.occurrence.title

    @property
    def color(self) -> str:
        return self.placed.color

    @property
    def all_day(self) -> bool:
        return self.placed.occurrence.all_day

    @property
    def left(self) -> float:
        return round(100 * self.lane / self.lanes, 3)

    @property
    def width(self) -> float:
        return round(100 / self.lanes, 3)


@dataclass
class Day:
    day: date
    chips: list[Chip] = field(default_factory=list)  # month: everything; week/day: the all-day row
    timed: list[Chip] = field(default_factory=list)  # week/day: the hour grid
    in_month: bool = True

    @property
    def shown(self) -> list[Chip]:
        return self.chips[:MONTH_CHIPS]

    @property
    def more(self) -> int:
        return max(0, len(self.chips) - MONTH_CHIPS)


def _local_days(placed: PlacedOccurrence, zone) -> tuple[date, date]:
    """First and last local day an occurrence covers (all-day ones by their dates, as iCalendar has them)."""
    occurrence = placed.occurrence
    if occurrence.all_day:
        first = occurrence.start.astimezone(UTC).date()
        return first, max(first, (occurrence.end.astimezone(UTC) - timedelta(days=1)).date())
    first = occurrence.start.astimezone(zone).date()
    last = (max(occurrence.end, occurrence.start + timedelta(microseconds=1)) - timedelta(microseconds=1))
    return first, last.astimezone(zone).date()


def _minutes(moment: datetime, zone, day: date) -> int:
    """Wall-clock minutes of `moment` into `day` (0..1440, clipped)."""
    local = moment.astimezone(zone)
    if local.date() < day:
        return 0
    if local.date() > day:
        return 1440
    return local.hour * 60 + local.minute


def _lay_out(chips: list[Chip]) -> None:
    """Overlapping timed chips side by side: each gets a lane within its group of overlaps."""
    group: list[Chip] = []
    lanes_end: list[float] = []
    group_end = 0.0
    for chip in sorted(chips, key=lambda item: (item.top, -item.height)):
        if group and chip.top >= group_end:
            for member in group:
                member.lanes = len(lanes_end)
            group, lanes_end, group_end = [], [], 0.0
        lane = next((index for index, end in enumerate(lanes_end) if end <= chip.top), len(lanes_end))
        if lane == len(lanes_end):
            lanes_end.append(0)
        lanes_end[lane] = chip.top + chip.height
        chip.lane = lane
        group.append(chip)
        group_end = max(group_end, chip.top + chip.height)
    for member in group:
        member.lanes = len(lanes_end)


def grid_days(events, first: date, count: int, zone, *, grid: bool,
              link: Callable[[PlacedOccurrence], str]) -> list[Day]:
    """The days [first, first + count) with the occurrences in each, each chip linking to `link(placed)`.
    `grid`: timed ones go to the hour grid."""
    start = datetime.combine(first, time(), tzinfo=zone).astimezone(UTC)
    end = datetime.combine(first + timedelta(days=count), time(), tzinfo=zone).astimezone(UTC)
    days = [Day(first + timedelta(days=offset)) for offset in range(count)]
    for placed in occurrences_between(events, start, end):
        occurrence = placed.occurrence
        url = link(placed)
        first_day, last_day = _local_days(placed, zone)
        for day in days:
            if not first_day <= day.day <= last_day:
                continue
            if occurrence.all_day:
                day.chips.append(Chip(placed, url, "All day"))
                continue
            starts_here = occurrence.start.astimezone(zone).date() == day.day
            label = f"{occurrence.start.astimezone(zone):%H:%M}" if starts_here else "…"
            if not grid:
                day.chips.append(Chip(placed, url, label))
                continue
            top = _minutes(occurrence.start, zone, day.day)
            bottom = max(_minutes(occurrence.end, zone, day.day), top + 20)  # at least 20 minutes tall
            span = f"{occurrence.start.astimezone(zone):%H:%M}–{occurrence.end.astimezone(zone):%H:%M}"
            chip = Chip(placed, url, span,
                        top=round(100 * top / 1440, 3), height=round(100 * (min(bottom, 1440) - top) / 1440, 3))
            day.timed.append(chip)
    for day in days:
        day.chips.sort(key=lambda chip: (not chip.all_day, chip.placed.occurrence.start))
        _lay_out(day.timed)
    return days


def month_start(day: date, months: int = 0) -> date:
    """The first of `day`'s month, or of the month `months` away."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def month_weeks(events, day: date, zone, *, link: Callable[[PlacedOccurrence], str]) -> list[list[Day]]:
    """The month view of `day`'s month: six weeks from the Monday on or before its first, the days of
    the months around it marked as such."""
    first = month_start(day)
    grid_start = first - timedelta(days=first.weekday())
    days = grid_days(events, grid_start, 42, zone, grid=False, link=link)
    for item in days:
        item.in_month = item.day.month == first.month
    return [days[index:index + 7] for index in range(0, 42, 7)]
