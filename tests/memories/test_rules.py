"""The rules of one field at a time (memories/rules.py); the whole-body verdict is in
tests/memories/test_write_verdicts.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memories.rules import clean_tags, derive_key, parse_timestamp


@pytest.mark.parametrize(
    "tags",
    [[""], ["   "], ["x" * 65], [f"t{i}" for i in range(21)], "docker", [1], ["a\nb"]],
)
def test_bad_tags_are_refused(tags):
    with pytest.raises(ValueError):
        clean_tags(tags)


def test_twenty_tags_after_dedup_are_fine():
    assert len(clean_tags([f"T{i}" for i in range(20)] + ["t0", "T1"])) == 20


def test_derived_key_differs_by_category_and_content():
    a = derive_key(category="fact", content="hello world")
    assert a == derive_key(category="fact", content="Hello   World")
    assert a != derive_key(category="note", content="hello world")
    assert a != derive_key(category="fact", content="hello world!")
    assert derive_key(category="note", content="日本語のテキスト").startswith("note_")
    assert derive_key(category="note", content="!!!").startswith("note_")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (1767225600, datetime(2026, 1, 1, tzinfo=UTC)),
        (1767225600.5, datetime(2026, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("1767225600", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T02:00:00+02:00", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T00:00:00", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01", datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_expires_at_accepts_iso_and_epoch(value, expected):
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize("value", ["soon", "", True, 1e300, "1e400", [], {}, 10**20])
def test_bad_expires_at_is_refused(value):
    with pytest.raises(ValueError):
        parse_timestamp(value)
