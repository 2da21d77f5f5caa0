"""Template helpers of the dashboard: inline SVG charts and small display filters."""

from __future__ import annotations

import json
import re
from datetime import datetime

from django import template
from django.conf import settings
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from dashboard import charts
from memories.versions import memory_version

register = template.Library()


@register.simple_tag
def registration_open() -> bool:
    return settings.SYNAPSE_ALLOW_REGISTRATION


@register.inclusion_tag("dashboard/charts/bars.html")
def bar_chart(items, title: str, chart_id: str):
    return {"chart": charts.bar_chart(list(items)), "title": title, "chart_id": chart_id}


@register.inclusion_tag("dashboard/charts/share.html")
def share_chart(part: int, whole: int, title: str, chart_id: str):
    return {"chart": charts.share_chart(part, whole), "title": title, "chart_id": chart_id}


@register.inclusion_tag("dashboard/charts/columns.html")
def writes_chart(series, title: str, chart_id: str):
    return {"chart": charts.column_chart(list(series)), "title": title, "chart_id": chart_id}


@register.filter
def audit_value(value) -> str:
    """An audit value as text: lists joined, None as an em dash, timestamps readable."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "(none)"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str) and len(value) >= 19 and value[4] == "-" and value[10] == "T":
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        return f"{moment:%Y-%m-%d %H:%M} UTC"
    return str(value)


SNIPPET_MARK = re.compile(r"«([^«»]*)»")


@register.filter
def snippet(text: str) -> SafeString:
    """A search snippet (matches marked «like this») as HTML with <mark>, all else escaped."""
    return mark_safe(SNIPPET_MARK.sub(r"<mark>\1</mark>", escape(text)))


@register.filter
def version(memory) -> str:
    """The memory's version, which a form acting on it sends back (`version`)."""
    return memory_version(memory)


@register.filter
def is_expired(memory) -> bool:
    return memory.is_expired(timezone.now())


@register.filter
def percent(value) -> str:
    return f"{round(float(value) * 100)}%"
