"""The orjson renderer answers byte for byte like DRF's JSONRenderer."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.exceptions import ErrorDetail
from rest_framework.renderers import JSONRenderer

from api.renderers import ORJSONRenderer

DATA = {
    "memories": [
        {
            "id": "mem_1",
            "content": 'Grüße, 東京, emoji 🧠, quote " backslash \\ tab \t newline \n',
            "tags": ["a", "b"],
            "confidence": 0.7,
            "verified": False,
            "expires_at": None,
        }
    ],
    "separators": "line\u2028paragraph\u2029end",
    "total": 1,
    "detail": ErrorDetail("Not found.", code="not_found"),
    "lazy": gettext_lazy("Invalid input."),
    "decimal": Decimal("1.5"),
    "when": datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
}


def test_same_bytes_as_drf():
    assert ORJSONRenderer().render(DATA) == JSONRenderer().render(DATA)


def test_none_is_an_empty_body():
    assert ORJSONRenderer().render(None) == b""


def test_indent_asked_for_is_honoured():
    indented = ORJSONRenderer().render({"a": [1]}, "application/json; indent=2")
    assert indented == JSONRenderer().render({"a": [1]}, "application/json; indent=2")


def test_lone_surrogate_fails_as_with_drf():
    data = {"text": "broken \ud800 half"}
    with pytest.raises(UnicodeEncodeError):
        JSONRenderer().render(data)
    with pytest.raises(UnicodeEncodeError):
        ORJSONRenderer().render(data)


def test_non_string_keys_as_drf_writes_them():
    data = {1: "one", None: "none", 2.5: ["x"]}
    assert ORJSONRenderer().render(data) == JSONRenderer().render(data)
