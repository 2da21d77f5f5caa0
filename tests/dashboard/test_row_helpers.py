"""The per-row template helpers give what the Django tags and filters they stand in for give."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.template import Context, Template
from django.template.defaultfilters import floatformat, truncatechars
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from dashboard.templatetags.dashboard import (
    audit_cell,
    audit_value,
    preview,
    time_element,
    two_places,
)
from memories.models import Memory


def render(source: str, **context) -> str:
    return Template("{% load dashboard %}" + source).render(Context(context))


@pytest.mark.parametrize("view", ["memory", "memory-verify", "memory-edit", "memory-delete"])
def test_memory_url_is_the_reversed_url(view):
    rows = [Memory(pk=f"mem_{i}abc", mind_id=f"m_{i}xyz") for i in range(3)]
    rendered = render(
        "{% for m in rows %}{% memory_url m view %}|{% endfor %}", rows=rows, view=view
    )
    assert rendered.split("|")[:-1] == [
        reverse(f"dashboard:{view}", args=[m.mind_id, m.pk]) for m in rows
    ]


def test_memory_url_quotes_and_escapes_what_the_url_tag_would():
    odd = Memory(pk="mem a&b=ü", mind_id="m?1#")
    assert render("{% memory_url m %}", m=odd) == render(
        "{% url 'dashboard:memory' m.mind_id m.pk %}", m=odd
    )


@pytest.mark.parametrize("length", [1, 10, 160, 240])
@pytest.mark.parametrize(
    "text",
    ["", "short", "word " * 100, "a" * 160, "b" * 161, "Ünïcödé text, ünïcödé " * 20],
)
def test_preview_cuts_as_truncatechars(text, length):
    assert preview(text, length) == truncatechars(text, length)


@pytest.mark.parametrize("value", [0, 0.5, 1, 0.125, 0.995, 0.3333, 0.005, 1e-9])
def test_two_places_is_floatformat_2(value):
    assert two_places(value) == floatformat(value, 2)


def test_two_places_of_nothing_is_empty():
    assert two_places(None) == ""


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_time_element_writes_utc_with_utc_in_its_title_whatever_the_zone(zone):
    value = datetime(2026, 3, 29, 0, 59, 7, 123456, tzinfo=UTC)
    with timezone.override(zone):
        assert render("{% time_element v %}", v=value) == (
            '<time datetime="2026-03-29T00:59:07+00:00" title="2026-03-29 00:59 UTC">'
            "2026-03-29 00:59 UTC</time>"
        )
        assert render("{% time_element v seconds=True %}", v=value) == (
            '<time datetime="2026-03-29T00:59:07+00:00" title="2026-03-29 00:59:07 UTC">'
            "2026-03-29 00:59:07 UTC</time>"
        )
    assert time_element(None) == ""


def test_time_element_of_another_zone_is_the_same_moment_in_utc():
    berlin = datetime(2026, 7, 1, 14, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    assert 'datetime="2026-07-01T12:30:00+00:00"' in time_element(berlin)
    assert ">2026-07-01 12:30 UTC</time>" in time_element(berlin)


@pytest.mark.parametrize(
    "value", ["2026-07-01T12:30:00Z", "2026-07-01T14:30:00+02:00", "2026-07-01T12:30:00"]
)
def test_a_timestamp_in_the_history_is_a_time_element(value):
    assert audit_cell(value) == time_element(datetime(2026, 7, 1, 12, 30, tzinfo=UTC))


@pytest.mark.parametrize("value", ["<b>2026</b>", "2026-07-01Tnot a time", None, ["a", "b"]])
def test_other_history_values_are_escaped_text(value):
    assert audit_cell(value) == escape(audit_value(value))
