"""Template helpers of the dashboard: inline SVG charts and small display filters."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, SupportsFloat, TypedDict
from urllib.parse import quote

from django import template
from django.conf import settings
from django.core.paginator import Page
from django.template import Context
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape, format_html, format_html_join
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe

from accounts.once import form_token_new
from dashboard import charts
from dashboard.views.common import FORM_TOKEN, PAGE_SIZES, page_size, take_undo_offer
from memories.models import Memory, MemoryEvent
from memories.services import UNDO_WINDOW
from memories.versions import memory_version
from minds.models import Mind

register = template.Library()


class ChartContext(TypedDict):
    chart: charts.BarChart | charts.ShareChart | charts.ColumnChart
    title: str
    chart_id: str


class UndoContext(TypedDict):
    offer: dict[str, Any] | None
    minutes: int
    next: str
    csrf_token: object  # the context's token, a lazy string, for {% csrf_token %}


@register.simple_tag
def registration_open() -> bool:
    return settings.SYNAPSE_ALLOW_REGISTRATION


@register.inclusion_tag("dashboard/charts/bars.html")
def bar_chart(items: Iterable[tuple[str, int]], title: str, chart_id: str) -> ChartContext:
    return {"chart": charts.bar_chart(list(items)), "title": title, "chart_id": chart_id}


@register.inclusion_tag("dashboard/charts/share.html")
def share_chart(part: int, whole: int, title: str, chart_id: str) -> ChartContext:
    return {"chart": charts.share_chart(part, whole), "title": title, "chart_id": chart_id}


@register.inclusion_tag("dashboard/charts/columns.html")
def writes_chart(
    series: Iterable[tuple[date, int, int]], title: str, chart_id: str
) -> ChartContext:
    return {"chart": charts.column_chart(list(series)), "title": title, "chart_id": chart_id}


@register.filter
def audit_value(value: object) -> str:
    """An audit value as text: lists joined, None as an em dash, timestamps readable."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "(none)"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    moment = _audit_moment(value)
    if moment is not None:
        return f"{moment:%Y-%m-%d %H:%M} UTC"
    return str(value)


@register.filter
def restored_values(restorable: dict[str, object], length: int = 60) -> str:
    """What a restore puts back, named as the history's tables name it: `content: “…”;
    tags: “a, b”`, each value as those tables show it, cut to `length` characters."""
    shown = []
    for name, value in restorable.items():
        text = audit_value(value)
        if len(text) > length:
            text = text[: length - 1].rstrip() + "…"
        shown.append(f"{name}: {text}" if text == "—" else f"{name}: “{text}”")
    return "; ".join(shown)


SNIPPET_MARK = re.compile(r"«([^«»]*)»")


@register.filter
def snippet(text: str) -> SafeString:
    """A search snippet (matches marked «like this») as HTML with <mark>, all else escaped."""
    return mark_safe(SNIPPET_MARK.sub(r"<mark>\1</mark>", escape(text)))


@register.filter
def json_string(text: str) -> str:
    """`text` as a JSON string, quotes included, for a JSON snippet (a Windows path keeps its
    backslashes); the template still escapes it for HTML."""
    return json.dumps(str(text))


@register.filter
def shell_word(text: str) -> str:
    """`text` as one word of a POSIX shell command, quoted only when it needs to be."""
    return shlex.quote(str(text))


@register.inclusion_tag("dashboard/_undo.html", takes_context=True)
def undo_offer(context: Context) -> UndoContext:
    """The Undo button for the action the messages above it confirm, if one was offered and
    the person may still write to the mind this page shows (a share lowered since, no)."""
    request = context.get("request")
    offer = take_undo_offer(request) if request is not None else None
    can = context.get("can")
    return {
        "offer": offer if can is None or can.write else None,
        "minutes": int(UNDO_WINDOW.total_seconds() // 60),
        "next": request.get_full_path() if request is not None else "",
        "csrf_token": context.get("csrf_token"),
    }


@register.simple_tag(takes_context=True)
def hidden_query(context: Context, leave_out: str = "", only: str = "") -> SafeString:
    """The page's query string as hidden inputs, for a GET form that sets some parameters and
    keeps the rest: all but the names in `leave_out`, or only those in `only` (space-separated)."""
    left, kept = set(leave_out.split()), set(only.split())
    return format_html_join(
        "",
        '<input type="hidden" name="{}" value="{}">',
        (
            (name, value)
            for name, values in context["request"].GET.lists()
            if name not in left and (not kept or name in kept)
            for value in values
        ),
    )


@register.simple_tag(takes_context=True)
def page_sizes(context: Context) -> list[tuple[int, bool]]:
    """The page sizes a person can pick, each with whether it is the one shown."""
    shown = page_size(context["request"])
    return [(size, size == shown) for size in PAGE_SIZES]


@register.filter
def page_range(page: Page[Any]) -> list[int | str]:
    """The page numbers a pager shows: the first, the last and two on each side of this one,
    with the paginator's ellipsis for the gaps."""
    return list(page.paginator.get_elided_page_range(page.number, on_each_side=2, on_ends=1))


@register.filter
def version(memory: Memory) -> str:
    """The memory's version, which a form acting on it sends back (`version`)."""
    return memory_version(memory)


@register.filter
def is_expired(memory: Memory) -> bool:
    return memory.is_expired(timezone.now())


@register.filter
def percent(value: SupportsFloat | str) -> str:
    return f"{round(float(value) * 100)}%"


# --- Per-row helpers: a table renders these for every one of up to 200 rows ----------------

_MIND_ID, _MEMORY_ID = "MINDID0", "MEMORYID0"
_SAFE = RFC3986_SUBDELIMS + "/~:@"  # what reverse() leaves unquoted


@register.simple_tag(takes_context=True)
def memory_url(context: Context, memory: Memory, view: str = "memory") -> str:
    """What `{% url 'dashboard:<view>' memory.mind_id memory.pk %}` gives, with the URL
    reversed once per page and view and the ids put in: reversing costs as much as the rest
    of a row."""
    # get, then set: the stubs type setdefault for the render context's own values only.
    patterns: dict[str, str] | None = context.render_context.get("memory_urls")
    if patterns is None:
        patterns = context.render_context["memory_urls"] = {}
    if view not in patterns:
        patterns[view] = reverse(f"dashboard:{view}", args=[_MIND_ID, _MEMORY_ID])
    ids = {_MIND_ID: quote(memory.mind_id, safe=_SAFE), _MEMORY_ID: quote(memory.pk, safe=_SAFE)}
    url = patterns[view]
    for placeholder, value in ids.items():
        url = url.replace(placeholder, value)
    return url


@register.filter
def preview(text: str, length: int) -> str:
    """`text` cut to `length` characters, the last of them "…" (as truncatechars, without
    its pass over every character of a long text)."""
    return text if len(text) <= length else text[: length - 1] + "…"


@register.filter
def two_places(value: float | None) -> str:
    """A confidence as the tables show it: two decimal places, halves rounded up (as
    floatformat:2)."""
    if value is None:
        return ""
    return str(Decimal(repr(value)).quantize(_HUNDREDTH, rounding=ROUND_HALF_UP))


_HUNDREDTH = Decimal("0.01")


@register.simple_tag
def time_element(value: datetime | None, seconds: bool = False) -> SafeString:
    """The one way the dashboard shows a moment: `<time datetime="ISO 8601, UTC"
    title="… UTC">YYYY-MM-DD HH:MM UTC</time>` (`seconds`: HH:MM:SS). It reads right
    without a script; dashboard.js rewrites the text into the browser's time zone and leaves
    UTC in the title."""
    if value is None:
        return mark_safe("")
    utc = value.astimezone(UTC)
    shown = utc.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        utc.replace(microsecond=0).isoformat(),
        shown,
        shown,
    )


@register.filter
def audit_cell(value: object) -> SafeString:
    """An audit value as a history table's cell shows it: a timestamp as time_element, all
    else as audit_value (escaped)."""
    moment = _audit_moment(value)
    if moment is not None:
        return time_element(moment)
    return escape(audit_value(value))


def _audit_moment(value: object) -> datetime | None:
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return None


@register.simple_tag(takes_context=True)
def form_token(context: Context) -> SafeString:
    """The hidden token of a form that acts once (dashboard.views.common.form_send), made
    for the signed-in person each time the form is shown."""
    token = form_token_new(user=context["request"].user)
    return format_html('<input type="hidden" name="{}" value="{}">', FORM_TOKEN, token)


def _is_you(context: Context, name: str) -> bool:
    """Whether `name`, as the audit trail keeps a person (their address), is the person
    reading the page."""
    user = context.get("user")
    email = getattr(user, "email", "") if getattr(user, "is_authenticated", False) else ""
    return bool(email) and name.lower() == str(email).lower()


@register.simple_tag(takes_context=True)
def actor_name(context: Context, event: MemoryEvent, mind: Mind) -> str:
    """Who made an audited change, as the person reading reads it: "you" for their own, an
    agent by the mind whose key it used (the row keeps the key's prefix), anyone else (on a
    shared mind, the other people) by the address the row keeps."""
    if event.actor_type == "agent":
        return f"agent of “{mind.name}”"
    if event.actor_type == "user" and _is_you(context, event.actor):
        return "you"
    return event.actor


@register.simple_tag(takes_context=True)
def actor_detail(context: Context, event: MemoryEvent) -> str:
    """What kind of actor that was; for an agent, which of the mind's keys it used; for the
    reader's own change, the address it was made under."""
    if event.actor_type == "agent" and event.actor:
        return f"agent, key {event.actor}"
    if event.actor_type == "user" and _is_you(context, event.actor):
        return event.actor
    return event.actor_type


@register.simple_tag(takes_context=True)
def person_name(context: Context, name: str) -> str:
    """A person's address as stored on a memory (who verified it): "you" for the reader."""
    return "you" if _is_you(context, name) else name
