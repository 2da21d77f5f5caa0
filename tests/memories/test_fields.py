"""The memory's public fields, declared once (memories/fields.py), and what derives from it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memories import fields
from memories.fields import memory_to_dict, values_to_dict
from memories.models import Memory
from memories.services import memory_verify
from tests.factories import PERSON, remember


def test_the_declaration_covers_every_column_of_the_record():
    columns = {f.attname for f in Memory._meta.concrete_fields}
    assert {f.attribute for f in fields.MEMORY_FIELDS} == columns


def test_derived_lists():
    assert fields.PUBLIC_FIELDS[:3] == ("id", "mind_id", "category")
    assert fields.WRITABLE_FIELDS == (
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "source",
        "confidence",
        "expires_at",
    )
    assert (
        tuple(name for name in fields.WRITABLE_FIELDS if name != "source")
        == fields.RESTORABLE_FIELDS
    )
    assert set(fields.AUDITED_FIELDS) == set(fields.PUBLIC_FIELDS) - {
        "id",
        "mind_id",
        "created_at",
        "updated_at",
    }
    assert set(fields.TOMBSTONE_FIELDS) == set(fields.PUBLIC_FIELDS) - {"id", "mind_id"}
    # The CSV has no mind id, and says whether a memory had expired beside its expiry.
    assert fields.CSV_COLUMNS == (
        "id",
        "category",
        "key",
        "content",
        "tags",
        "priority",
        "source",
        "verified",
        "confidence",
        "expires_at",
        "expired",
        "created_at",
        "updated_at",
        "verified_at",
        "verified_by",
        "superseded_by",
    )
    assert set(fields.IGNORED_FIELDS) == (
        set(fields.PUBLIC_FIELDS) - set(fields.WRITABLE_FIELDS) | {"action", "warnings", "expired"}
    )
    assert fields.ADMIN_FIELDS[1] == "mind"


def test_schemas_describe_every_field():
    assert list(fields.output_schema()["properties"]) == list(fields.PUBLIC_FIELDS)
    assert list(fields.input_schema()["properties"]) == list(fields.WRITABLE_FIELDS)


def test_values_and_instance_give_the_same_dict(mind):
    now = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    remember(mind, "fact_plain", "no tags, no expiry", now=now.replace(microsecond=0))
    remember(
        mind,
        "fact_full",
        "tags, expiry, verified",
        tags=["Zeta", "alpha"],
        priority="critical",
        confidence=0.25,
        expires_at=now + timedelta(days=3),
        now=now,
    )
    memory_verify(memory=Memory.objects.get(key="fact_full"), actor=PERSON, now=now)
    rows = Memory.objects.filter(mind=mind).order_by("key").values(*fields.VALUE_NAMES)
    instances = Memory.objects.filter(mind=mind).order_by("key")
    expected = [memory_to_dict(m) for m in instances]
    answered = [values_to_dict(row) for row in rows]
    assert answered == expected
    assert [list(d) for d in expected] == [list(fields.PUBLIC_FIELDS)] * 2  # key order too
    assert expected[0]["verified"] is True and expected[0]["tags"] == ["zeta", "alpha"]
    assert expected[0]["priority"] == "critical"
    assert expected[0]["expires_at"] == "2026-03-04T12:00:00.123456Z"
    assert expected[1]["verified_by"] is None
