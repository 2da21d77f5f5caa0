from datetime import date

from dashboard.charts import bar_chart, column_chart, share_chart
from dashboard.templatetags.dashboard import audit_value, snippet


def test_bars_scale_to_the_largest_value():
    chart = bar_chart([("a", 2), ("b", 4), ("c", 0)])
    widths = [bar.width for bar in chart.bars]
    assert widths[1] == 2 * widths[0] and widths[2] == 0
    assert chart.total == 6
    assert chart.description == "a: 2, b: 4, c: 0"
    assert chart.bars[1].value_x > chart.bars[1].x + chart.bars[1].width


def test_bars_of_nothing_do_not_divide_by_zero():
    chart = bar_chart([("a", 0)])
    assert chart.bars[0].width == 0


def test_share():
    chart = share_chart(1, 4, width=400)
    assert (chart.percent, chart.rest, chart.part_width, chart.rest_width) == (25, 3, 100, 300)
    assert share_chart(0, 0).percent == 0


def test_columns_stack_and_label_weekly():
    days = [(date(2026, 11, d), d % 3, 1) for d in range(1, 31)]
    chart = column_chart(days)
    assert chart.largest == 3
    top = chart.columns[1]  # 2 created + 1 updated: the tallest
    assert top.first_height + top.second_height == chart.plot_bottom - chart.plot_top
    assert top.second_y + top.second_height == top.first_y
    assert [c.label for c in chart.columns if c.label] == [
        "Nov 2",
        "Nov 9",
        "Nov 16",
        "Nov 23",
        "Nov 30",
    ]
    assert (chart.total_first, chart.total_second) == (30, 30)


def test_snippet_marks_matches_and_escapes_everything_else():
    assert snippet("a «match» <b>") == "a <mark>match</mark> &lt;b&gt;"


def test_audit_values_read_well():
    assert audit_value(None) == "—"
    assert audit_value(["a", "b"]) == "a, b"
    assert audit_value(True) == "yes"
    assert audit_value("2026-11-30T05:00:00Z") == "2026-11-30 05:00 UTC"
    assert audit_value("plain") == "plain"
