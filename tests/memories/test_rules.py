"""The rules of one field at a time (memories/rules.py); the whole-body verdict is in
tests/memories/test_write_verdicts.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.errors import NON_FIELD, Invalid
from memories import rules
from memories.actors import Actor
from memories.models import MAX_TAGS
from memories.rules import (
    MAX_UNKNOWN_NAMED,
    clean_tags,
    content_bytes,
    derive_key,
    memory_body_clean,
    parse_timestamp,
)


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


def test_a_huge_tag_list_is_refused_after_the_limit_plus_one(monkeypatch):
    calls = []

    def counting(tag: str) -> str:
        calls.append(tag)
        return tag.strip().lower()

    monkeypatch.setattr(rules, "normalize_tag", counting)
    with pytest.raises(ValueError, match="At most 20 different tags") as refused:
        clean_tags([f"tag{i}" for i in range(100_000)])
    assert "100,000 given" in str(refused.value)
    assert len(calls) <= MAX_TAGS + 1


def test_many_duplicates_of_few_tags_are_fine():
    assert clean_tags(["Docker", " docker", "DOCKER ", "work"] * 1000) == ["docker", "work"]


def test_many_unknown_fields_are_named_up_to_ten():
    body = {"category": "fact", "content": "x", **{f"field_{i}": 1 for i in range(50_000)}}
    with pytest.raises(Invalid) as refused:
        memory_body_clean(body, actor=Actor(kind="agent", name="mk_a"))
    fields = refused.value.fields
    assert len(fields) == MAX_UNKNOWN_NAMED + 1
    assert fields[NON_FIELD] == ["And 49,990 more unknown fields, not named here."]
    assert "field_0" in fields and "Unknown field" in fields["field_0"][0]


def test_content_bytes_are_utf8_bytes():
    assert content_bytes("abc") == 3
    assert content_bytes("grüße 日本") == len("grüße 日本".encode())


@pytest.mark.parametrize("value", [10**400, -(10**400), 10**309], ids=["1e400", "-1e400", "1e309"])
def test_a_confidence_too_big_for_a_float_is_refused_not_an_overflow(value):
    with pytest.raises(ValueError, match=r"between 0\.0 and 1\.0"):
        rules.clean_confidence(value)
