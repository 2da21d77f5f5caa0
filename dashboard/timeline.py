"""The overview's timeline: the periods it offers, how far back each reaches, and its series
drawn from the core's memory_timeline (memories/pictures.py decides what a write is)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dashboard import charts
from memories.fields import CATEGORIES
from memories.pictures import PERIOD_DEFAULT, memory_timeline, period_start
from minds.models import Mind


@dataclass(frozen=True)
class Window:
    """How a period is shown: how many of them (the last ending now), every how many an axis
    label, and how a period's start reads on the axis and in the table (UTC)."""

    periods: int
    label_every: int
    axis: str
    full: str
    midnight: str = ""  # the axis label of a period starting a day, when it differs

    def axis_label(self, start: datetime) -> str:
        at_midnight = self.midnight and start.hour == 0
        # The day without its leading zero, as the writes chart labels it.
        shown = start.strftime(self.midnight if at_midnight else self.axis)
        return shown.replace("{day}", str(start.day))

    def full_label(self, start: datetime) -> str:
        return start.strftime(self.full)


WINDOWS: dict[str, Window] = {
    "hour": Window(48, 6, "%H:00", "%Y-%m-%d %H:00 UTC", midnight="%b {day}"),
    "day": Window(30, 7, "%b {day}", "%Y-%m-%d"),
    "week": Window(26, 4, "%b {day}", "week of %Y-%m-%d"),
    "month": Window(24, 4, "%b %Y", "%Y-%m"),
}
DEFAULT = PERIOD_DEFAULT


def period_shown(asked: str | None) -> str:
    """The period the overview shows for `?period=`: one of WINDOWS, else the default (a
    hand-typed or stale link still shows the page)."""
    return asked if asked in WINDOWS else DEFAULT


def span_text(period: str) -> str:
    """What the chart covers, in words: "the last … days"."""
    return f"the last {WINDOWS[period].periods} {period}s"


def timeline_chart(*, mind: Mind, period: str, now: datetime) -> charts.StackedChart:
    """The mind's writes per `period` over its window up to `now`, stacked by category; the
    periods without a write are drawn empty."""
    window = WINDOWS[period]
    starts = [period_start(now, period, back=back) for back in reversed(range(window.periods))]
    found = memory_timeline(mind=mind, period=period, since=starts[0], now=now)
    by_start = {
        datetime.fromisoformat(entry["start"].replace("Z", "+00:00")): entry["categories"]
        for entry in found["timeline"]
    }
    series = [
        (window.full_label(start), window.axis_label(start), by_start.get(start, {}))
        for start in starts
    ]
    return charts.stacked_chart(series, CATEGORIES, label_every=window.label_every)
