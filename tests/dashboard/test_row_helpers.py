"""The per-row template helpers give what the Django tags and filters they stand in for give."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.template import Context, Template
from django.template.defaultfilters import floatformat, truncatechars
from django.urls import reverse
from django.utils import timezone

from dashboard.templatetags.dashboard import preview, time_element, two_places
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
def test_time_element_is_what_the_date_filter_writes(zone):
    value = datetime(2026, 3, 29, 0, 59, 7, 123456, tzinfo=UTC)
    with timezone.override(zone):
        # The date filter in a template: the value in the current time zone first.
        assert render("{% time_element v %}", v=value) == render(
            """<time datetime="{{ v|date:'c' }}">{{ v|date:"Y-m-d H:i" }}</time>""", v=value
        )
        assert render("{% time_element v seconds=True %}", v=value) == render(
            """<time datetime="{{ v|date:'c' }}">{{ v|date:"Y-m-d H:i:s" }}</time>""", v=value
        )
    assert time_element(None) == ""
