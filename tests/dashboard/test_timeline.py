"""The overview's timeline: writes per period stacked by category, its period switch, and
its numbers as a table."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from dashboard import charts, timeline
from memories import services
from tests.dashboard.conftest import AGENT
from tests.factories import share_make, upsert, user_make

NOW = datetime(2026, 12, 4, 18, 30, tzinfo=UTC)


@pytest.fixture
def frozen(monkeypatch):
    """The page's clock at NOW (the views read timezone.now once)."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    return NOW


def _url(mind, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return reverse("dashboard:mind", args=[mind.pk]) + (f"?{query}" if query else "")


def _timeline_table(html: str) -> list[list[str]]:
    """The rows of the timeline's table: each cell's text."""
    section = html[html.index('id="timeline"') :]
    body = section[section.index("<tbody>") : section.index("</tbody>")]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        for row in rows
    ]


@pytest.fixture
def writes(mind, frozen):
    """Writes spread over time: two facts and a preference today, one fact edited an hour
    ago, a note ten days ago and a skill a year ago."""
    a = upsert(mind, "a", "one", category="fact", now=NOW - timedelta(hours=3)).memory
    upsert(mind, "b", "two", category="fact", now=NOW - timedelta(hours=2))
    upsert(mind, "c", "three", category="preference", now=NOW - timedelta(hours=2))
    services.memory_change(
        memory=a, actor=AGENT, body={"content": "one, edited"}, now=NOW - timedelta(hours=1)
    )
    upsert(mind, "d", "four", category="note", now=NOW - timedelta(days=10))
    upsert(mind, "e", "five", category="skill", now=NOW - timedelta(days=365))
    return mind


def test_day_is_the_default_and_stacks_by_category(web, writes):
    response = web.get(_url(writes))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'aria-current="true">Day</a>' in html
    rows = _timeline_table(html)
    # Headers: the categories with a write in the window, in their declared order.
    header = html[html.index('id="timeline"') :]
    assert re.search(r">Preference</th>.*>Fact</th>.*>Note</th>.*>All</th>", header, re.S)
    assert ["2026-11-24", "0", "0", "1", "1"] in rows
    assert ["2026-12-04", "1", "3", "0", "4"] in rows
    # The skill of a year ago is outside the last 30 days.
    assert "skill" not in header[: header.index("</figure>")]
    assert len(rows) == 2


@pytest.mark.parametrize(
    ("period", "row"),
    [
        ("hour", ["2026-12-04 16:00 UTC", "1", "1", "2"]),
        ("day", ["2026-12-04", "1", "3", "0", "4"]),
        ("week", ["week of 2026-11-30", "1", "3", "0", "4"]),
        ("month", ["2026-12", "1", "3", "0", "0", "4"]),
    ],
)
def test_each_period(web, writes, period, row):
    html = web.get(_url(writes, period=period)).content.decode()
    assert f'aria-current="true">{period.capitalize()}</a>' in html
    rows = _timeline_table(html)
    assert row in rows
    assert f"Writes per {period} as a table" in html


def test_each_window_reaches_only_its_span(web, writes):
    """The hour view shows only today's writes; the month view reaches back to the skill of
    a year ago."""
    hour_rows = _timeline_table(web.get(_url(writes, period="hour")).content.decode())
    assert [r[0] for r in hour_rows] == [
        "2026-12-04 15:00 UTC",
        "2026-12-04 16:00 UTC",
        "2026-12-04 17:00 UTC",
    ]
    month_html = web.get(_url(writes, period="month")).content.decode()
    month_rows = _timeline_table(month_html)
    assert [r[0] for r in month_rows] == ["2025-12", "2026-11", "2026-12"]


def test_a_bad_period_falls_back_to_days_and_says_so(web, writes):
    response = web.get(_url(writes, period="fortnight"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "There is no period “fortnight”: showing writes per day." in html
    assert 'aria-current="true">Day</a>' in html


def test_period_links_keep_the_rest_of_the_page(web, writes):
    html = web.get(_url(writes, at="2026-12-01T00:00")).content.decode()
    assert "?at=2026-12-01T00%3A00&amp;period=week#timeline" in html


def test_no_writes_says_so(web, mind, frozen):
    html = web.get(_url(mind)).content.decode()
    assert "No writes in the last 30 days." in html
    assert "0 writes in the last 30 days" in html


def test_a_reader_sees_it_a_stranger_gets_404(writes, client):
    reader = user_make("reader@example.com")
    share_make(writes, reader, "read")
    client.force_login(reader)
    assert client.get(_url(writes, period="week")).status_code == 200
    client.force_login(user_make("nobody@example.com"))
    assert client.get(_url(writes, period="week")).status_code == 404


def test_the_windows_cover_the_periods_the_core_offers():
    from memories.pictures import PERIODS

    assert set(timeline.WINDOWS) <= set(PERIODS)
    assert timeline.DEFAULT in timeline.WINDOWS


def test_stacks_put_the_first_category_at_the_bottom():
    chart = charts.stacked_chart(
        [("p1", "P1", {"fact": 2, "note": 2}), ("p2", "P2", {})],
        ("fact", "note"),
        plot_height=100,
    )
    first = chart.stacks[0]
    assert [s.category for s in first.segments] == ["fact", "note"]
    assert first.segments[0].y + first.segments[0].height == chart.plot_bottom
    assert first.segments[1].y + first.segments[1].height == first.segments[0].y
    assert chart.stacks[1].segments == []
    assert chart.table == [("p1", [2, 2], 4)]
    assert chart.categories == [("fact", 2), ("note", 2)]


def test_hours_name_the_day_at_midnight():
    window = timeline.WINDOWS["hour"]
    assert window.axis_label(datetime(2026, 12, 4, 0, tzinfo=UTC)) == "Dec 4"
    assert window.axis_label(datetime(2026, 12, 4, 6, tzinfo=UTC)) == "06:00"
    assert timeline.WINDOWS["day"].axis_label(datetime(2026, 12, 4, tzinfo=UTC)) == "Dec 4"


def test_an_empty_period_shows_days_without_a_word(web, writes):
    html = web.get(_url(writes, period="")).content.decode()
    assert 'aria-current="true">Day</a>' in html
    assert "There is no period" not in html
