"""Chart geometry for the overview's inline SVG: plain numbers, drawn by templates.

No chart library: a bar is a rectangle, and the templates put every number in text too
(labels beside the bars and a data table), so nothing is told by colour or shape alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

WIDTH = 480
LABEL_WIDTH = 96
VALUE_WIDTH = 44
ROW_HEIGHT = 26
BAR_HEIGHT = 16


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    x: float
    y: float
    width: float
    height: float

    @property
    def text_y(self) -> float:
        return self.y + self.height / 2

    @property
    def value_x(self) -> float:
        return round(self.x + self.width + 6, 1)


@dataclass(frozen=True)
class BarChart:
    bars: list[Bar]
    width: int
    height: int
    bar_x: int
    total: int

    @property
    def label_x(self) -> int:
        return self.bar_x - 8

    @property
    def description(self) -> str:
        return ", ".join(f"{bar.label}: {bar.value}" for bar in self.bars)


def bar_chart(items: list[tuple[str, int]]) -> BarChart:
    """Horizontal bars, one row per (label, value), scaled to the largest value."""
    largest = max((value for _, value in items), default=0) or 1
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = [
        Bar(
            label=label,
            value=value,
            x=LABEL_WIDTH,
            y=index * ROW_HEIGHT + (ROW_HEIGHT - BAR_HEIGHT) / 2,
            width=round(span * value / largest, 1),
            height=BAR_HEIGHT,
        )
        for index, (label, value) in enumerate(items)
    ]
    return BarChart(
        bars=bars,
        width=WIDTH,
        height=max(len(items), 1) * ROW_HEIGHT,
        bar_x=LABEL_WIDTH,
        total=sum(value for _, value in items),
    )


@dataclass(frozen=True)
class ShareChart:
    part: int
    whole: int
    width: int
    part_width: float

    @property
    def percent(self) -> int:
        return round(100 * self.part / self.whole) if self.whole else 0

    @property
    def percent_text(self) -> str:
        """The share in whole percent, but never "0%" while some are, nor "100%" while some
        are not: "<1%" and ">99%" there."""
        if self.part > 0 and self.percent == 0:
            return "<1%"
        if self.part < self.whole and self.percent == 100:
            return ">99%"
        return f"{self.percent}%"

    @property
    def rest(self) -> int:
        return self.whole - self.part

    @property
    def rest_width(self) -> float:
        return round(self.width - self.part_width, 1)


def share_chart(part: int, whole: int, width: int = WIDTH) -> ShareChart:
    """One bar split in two: `part` of `whole` (e.g. verified of all)."""
    part_width = round(width * part / whole, 1) if whole else 0.0
    return ShareChart(part=part, whole=whole, width=width, part_width=part_width)


@dataclass(frozen=True)
class Column:
    day: date
    first: int
    second: int
    x: float
    width: float
    first_y: float
    first_height: float
    second_y: float
    second_height: float
    label: str  # shown under the axis, or ""

    @property
    def label_x(self) -> float:
        return round(self.x + self.width, 1)


@dataclass(frozen=True)
class ColumnChart:
    columns: list[Column]
    width: int
    height: int
    plot_top: int
    plot_bottom: int
    largest: int
    total_first: int
    total_second: int

    @property
    def label_y(self) -> int:
        """Where the day labels hang from: below the axis, clear of the "0" that sits on it."""
        return self.plot_bottom + 10


def column_chart(
    series: list[tuple[date, int, int]], width: int = WIDTH, plot_height: int = 140
) -> ColumnChart:
    """Stacked columns per day: `first` at the bottom, `second` above it."""
    top, left, right = 16, 28, 4
    bottom = top + plot_height
    largest = max((a + b for _, a, b in series), default=0)
    scale = plot_height / largest if largest else 0.0
    slot = (width - left - right) / max(len(series), 1)
    gap = min(2.0, slot / 4)
    columns = []
    for index, (day, first, second) in enumerate(series):
        first_height = round(first * scale, 1)
        second_height = round(second * scale, 1)
        # Label the last day and every seventh day before it.
        labelled = (len(series) - 1 - index) % 7 == 0
        columns.append(
            Column(
                day=day,
                first=first,
                second=second,
                x=round(left + index * slot + gap / 2, 1),
                width=round(slot - gap, 1),
                first_y=round(bottom - first_height, 1),
                first_height=first_height,
                second_y=round(bottom - first_height - second_height, 1),
                second_height=second_height,
                label=f"{day:%b} {day.day}" if labelled else "",
            )
        )
    return ColumnChart(
        columns=columns,
        width=width,
        height=bottom + 34,
        plot_top=top,
        plot_bottom=bottom,
        largest=largest,
        total_first=sum(a for _, a, _ in series),
        total_second=sum(b for _, _, b in series),
    )


@dataclass(frozen=True)
class Segment:
    category: str
    value: int
    y: float
    height: float


@dataclass(frozen=True)
class Stack:
    label: str  # the period in full, for the tooltip and the table
    axis_label: str  # shown under the axis, or ""
    total: int
    x: float
    width: float
    segments: list[Segment]

    @property
    def label_x(self) -> float:
        return round(self.x + self.width, 1)


@dataclass(frozen=True)
class StackedChart:
    stacks: list[Stack]
    categories: list[tuple[str, int]]  # those with a write, in the order given, with totals
    width: int
    height: int
    plot_top: int
    plot_bottom: int
    largest: int
    total: int

    @property
    def label_y(self) -> int:
        return self.plot_bottom + 10

    @property
    def table(self) -> list[tuple[str, list[int], int]]:
        """The chart's table: each period with a write, its count per category (those of
        `categories`, in order) and its total."""
        rows = []
        for stack in self.stacks:
            if stack.total:
                values = {segment.category: segment.value for segment in stack.segments}
                counts = [values.get(category, 0) for category, _ in self.categories]
                rows.append((stack.label, counts, stack.total))
        return rows


def stacked_chart(
    series: list[tuple[str, str, dict[str, int]]],
    categories: tuple[str, ...],
    *,
    label_every: int = 7,
    width: int = WIDTH,
    plot_height: int = 140,
) -> StackedChart:
    """Columns per period, each stacked by category in the order of `categories` (the first
    at the bottom). `series` holds (full label, axis label, counts by category); the axis
    label shows under the last period and every `label_every`-th before it."""
    top, left, right = 16, 28, 4
    bottom = top + plot_height
    totals = [sum(counts.values()) for _, _, counts in series]
    largest = max(totals, default=0)
    scale = plot_height / largest if largest else 0.0
    slot = (width - left - right) / max(len(series), 1)
    gap = min(2.0, slot / 4)
    stacks = []
    for index, (label, axis_label, counts) in enumerate(series):
        segments, base = [], float(bottom)
        for category in categories:
            value = counts.get(category, 0)
            if value:
                height = round(value * scale, 1)
                base = round(base - height, 1)
                segments.append(Segment(category=category, value=value, y=base, height=height))
        labelled = (len(series) - 1 - index) % label_every == 0
        stacks.append(
            Stack(
                label=label,
                axis_label=axis_label if labelled else "",
                total=totals[index],
                x=round(left + index * slot + gap / 2, 1),
                width=round(slot - gap, 1),
                segments=segments,
            )
        )
    per_category = {c: sum(counts.get(c, 0) for _, _, counts in series) for c in categories}
    return StackedChart(
        stacks=stacks,
        categories=[(c, n) for c, n in per_category.items() if n],
        width=width,
        height=bottom + 34,
        plot_top=top,
        plot_bottom=bottom,
        largest=largest,
        total=sum(totals),
    )
