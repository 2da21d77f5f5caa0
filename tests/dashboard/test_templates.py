"""The templates themselves: what Django would show on the page by mistake."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_no_short_comment_spans_lines():
    # Django's {# … #} ends at the line's end: one that goes on shows on the page as text.
    broken = [
        f"{path.relative_to(TEMPLATES)}:{text[: match.start()].count(chr(10)) + 1}"
        for path in TEMPLATES.rglob("*.html")
        for text in [path.read_text()]
        for match in re.finditer(r"\{#(?:(?!#\}).)*$", text, re.M)
    ]
    assert broken == []
