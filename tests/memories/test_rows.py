"""memories/rows.py stores, column by column, what save() (or bulk_create) would store.

Each write is made twice from the same state, once through rows.py and once through the
ORM, and the two rows are read back raw (every column, those of triggers included).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, models, transaction

from memories import rows
from memories.models import (
    EmbeddingJob,
    Memory,
    MemoryEvent,
    MemorySpan,
    MemoryTag,
    MemoryVector,
    Priority,
)
from webhooks.models import WebhookDelivery, WebhookEvent

# Every model rows.py writes; test_every_model_written_is_held_here keeps the list whole.
WRITTEN: tuple[type[models.Model], ...] = (
    Memory,
    MemoryTag,
    MemoryEvent,
    MemorySpan,
    EmbeddingJob,
    MemoryVector,
    WebhookEvent,
    WebhookDelivery,
)

AT = datetime(2026, 5, 1, 9, 0, 0, 123456, tzinfo=UTC)
# Another zone, so both writers must bring it to the database's time the same way.
LATER = datetime(2026, 5, 2, 11, 30, 0, 654321, tzinfo=timezone(timedelta(hours=2)))


def stored(model: type[models.Model], column: str, value: Any) -> dict[str, Any]:
    """The one row of `model` whose `column` holds `value`, as the database returns it: every
    column but a primary key the database numbers itself."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT * FROM {quote(model._meta.db_table)} WHERE {quote(column)} = %s", [value]
        )
        names = [c[0] for c in cursor.description]
        found = cursor.fetchall()
    assert len(found) == 1, found
    row = dict(zip(names, found[0], strict=True))
    if isinstance(model._meta.pk, models.AutoField):
        del row[model._meta.pk.column]
    for name, cell in row.items():
        if isinstance(cell, memoryview):
            row[name] = bytes(cell)
    return row


def written(write: Callable[[], object], model: type[models.Model], column: str, value: Any):
    """The row `write` leaves, read back; then the database as it was before."""
    with transaction.atomic():
        write()
        row = stored(model, column, value)
        transaction.set_rollback(True)
    return row


def json_columns(model: type[models.Model]) -> set[str]:
    return {f.column for f in model._meta.concrete_fields if isinstance(f, models.JSONField)}


def assert_same_row(model: type[models.Model], through_rows: dict, through_orm: dict) -> None:
    assert through_rows.keys() == through_orm.keys()
    if connection.vendor == "sqlite":
        # The one difference allowed: SQLite keeps JSON as text, which rows.py writes
        # compact and unescaped (orjson); the JSON values are the same.
        for column in json_columns(model):
            assert json.loads(through_rows[column]) == json.loads(through_orm[column]), column
            through_rows = {**through_rows, column: None}
            through_orm = {**through_orm, column: None}
    differ = {
        column: {"rows.py": through_rows[column], "ORM": through_orm[column]}
        for column in through_rows
        if through_rows[column] != through_orm[column]
    }
    assert not differ, f"{model.__name__}: rows.py and the ORM stored different values: {differ}"


def memory_values(mind, **values: Any) -> dict[str, Any]:
    """Every field of a memory, given: nothing left to a default that differs per call."""
    return {
        "id": "mem_rows0000000000000000000001",
        "mind_id": mind.pk,
        "category": "fact",
        "key": "café",
        "content": 'Olive prefers "tea" — not coffee.\nTwo lines.',
        "tags": ["drinks", "café", "Ünïcode"],
        "priority": Priority.HIGH,
        "source": "user",
        "verified": True,
        "confidence": 0.95,
        "expires_at": LATER,
        "created_at": AT,
        "updated_at": LATER,
        "verified_at": AT,
        "verified_by": "olive@example.com",
        **values,
    }


# Values the fast paths pass as they are, and values they hand to get_db_prep_save.
MEMORY_CASES: dict[str, dict[str, Any]] = {
    "every field": {},
    "plain types": {"priority": 2, "confidence": 1.0, "tags": []},
    "values to convert": {"priority": Priority.LOW, "confidence": 1, "verified": 0},
    "nulls": {"expires_at": None, "verified_at": None, "verified_by": "", "verified": False},
}


@pytest.mark.parametrize("case", MEMORY_CASES)
def test_memory_insert_stores_what_save_stores(mind, case):
    values = memory_values(mind, **MEMORY_CASES[case])
    through_rows = written(lambda: rows.insert(Memory, [values]), Memory, "id", values["id"])
    through_orm = written(
        lambda: Memory(**values).save(force_insert=True), Memory, "id", values["id"]
    )
    assert_same_row(Memory, through_rows, through_orm)


def test_memory_insert_fills_defaults_as_the_model_does(mind):
    given = ("id", "mind_id", "category", "key", "content", "created_at", "updated_at")
    values = {name: value for name, value in memory_values(mind).items() if name in given}
    through_rows = written(lambda: rows.insert(Memory, [values]), Memory, "id", values["id"])
    through_orm = written(
        lambda: Memory(**values).save(force_insert=True), Memory, "id", values["id"]
    )
    assert_same_row(Memory, through_rows, through_orm)


def seed_memory(mind) -> Memory:
    memory = Memory(**memory_values(mind, verified=False, verified_at=None, verified_by=""))
    memory.save(force_insert=True)
    return memory


CHANGES = {
    "content": "Now coffee, after all.",
    "tags": ["changed", "ß"],
    "priority": Priority.CRITICAL,
    "confidence": 0.5,
    "expires_at": None,
    "updated_at": AT + timedelta(days=3),
    "verified": True,
    "verified_at": LATER,
    "verified_by": "olive@example.com",
}


@pytest.mark.parametrize("write", ["update", "update_same"])
def test_memory_update_stores_what_save_update_fields_stores(mind, write):
    memory = seed_memory(mind)
    names = list(CHANGES)

    def changed() -> Memory:
        fresh = Memory.objects.get(pk=memory.pk)
        for name, value in CHANGES.items():
            setattr(fresh, name, value)
        return fresh

    through_rows = written(
        lambda: getattr(rows, write)(Memory, [changed()], names), Memory, "id", memory.pk
    )
    through_orm = written(lambda: changed().save(update_fields=names), Memory, "id", memory.pk)
    assert_same_row(Memory, through_rows, through_orm)


def test_memory_tag_insert_stores_what_save_stores(mind):
    memory = seed_memory(mind)
    values = {"memory_id": memory.pk, "mind_id": mind.pk, "tag": "naïve"}
    through_rows = written(lambda: rows.insert(MemoryTag, [values]), MemoryTag, "tag", "naïve")
    through_orm = written(
        lambda: MemoryTag(**values).save(force_insert=True), MemoryTag, "tag", "naïve"
    )
    assert_same_row(MemoryTag, through_rows, through_orm)


def test_memory_event_insert_stores_what_save_stores(mind):
    values = {
        "mind_id": mind.pk,
        "memory_id": "mem_rows0000000000000000000001",
        "category": "fact",
        "key": "café",
        "action": MemoryEvent.Action.UPDATE,
        "actor": "olive@example.com",
        "actor_type": "user",
        "at": LATER,
        "changes": {
            "content": {"old": "tea", "new": 'thé "vert"\n'},
            "confidence": {"old": 0.7, "new": 1.0},
            "tags": {"old": [], "new": ["ä", "b"]},
            "expires_at": {"old": None, "new": "2026-05-02T09:30:00Z"},
        },
    }
    column = "memory_id"
    through_rows = written(
        lambda: rows.insert(MemoryEvent, [values]), MemoryEvent, column, values[column]
    )
    through_orm = written(
        lambda: MemoryEvent(**values).save(force_insert=True), MemoryEvent, column, values[column]
    )
    assert_same_row(MemoryEvent, through_rows, through_orm)


def upserted_both_ways(
    model: type[models.Model],
    values: dict[str, Any],
    *,
    conflict: str,
    replace: list[str],
    before: dict[str, Any] | None,
):
    """rows.upsert and bulk_create(update_conflicts=True) of `values`, over the row `before`
    (or none)."""
    column = model._meta.pk.column

    def through(write: Callable[[], object]) -> Callable[[], None]:
        def seeded_then_written() -> None:
            if before is not None:
                model(**before).save(force_insert=True)
            write()

        return seeded_then_written

    through_rows = written(
        through(lambda: rows.upsert(model, [values], conflict=conflict, replace=replace)),
        model,
        column,
        values[column],
    )
    through_orm = written(
        through(
            lambda: model._default_manager.bulk_create(
                [model(**values)],
                update_conflicts=True,
                unique_fields=[conflict],
                update_fields=replace,
            )
        ),
        model,
        column,
        values[column],
    )
    assert_same_row(model, through_rows, through_orm)


@pytest.mark.parametrize("existing", [False, True], ids=["new", "over an existing row"])
def test_embedding_job_upsert_stores_what_bulk_create_stores(mind, existing):
    values = {
        "memory_id": "mem_rows0000000000000000000001",
        "mind_id": mind.pk,
        "queued_at": LATER,
        "due_at": LATER,
        "attempts": 0,
        "last_error": "",
    }
    old = {**values, "mind_id": "other", "queued_at": AT, "due_at": None, "attempts": 5}
    upserted_both_ways(
        EmbeddingJob,
        values,
        conflict="memory_id",
        replace=["queued_at", "due_at", "attempts", "last_error"],
        before={**old, "last_error": "answered 413"} if existing else None,
    )


@pytest.mark.parametrize("existing", [False, True], ids=["new", "over an existing row"])
def test_memory_vector_upsert_stores_what_bulk_create_stores(mind, existing):
    memory = seed_memory(mind)
    values = {
        "memory_id": memory.pk,
        "mind_id": mind.pk,
        "model": "fake-model",
        "text_hash": "0123456789abcdef0123456789abcdef",
        "vector": bytes(range(16)),
        "embedded_at": LATER,
    }
    old = {**values, "model": "old-model", "vector": bytes(16), "embedded_at": AT}
    upserted_both_ways(
        MemoryVector,
        values,
        conflict="memory",
        replace=["mind", "model", "text_hash", "vector", "embedded_at"],
        before=old if existing else None,
    )


# --- The guard: a field rows.py would not prepare as save() does --------------------------


@pytest.mark.parametrize("model", WRITTEN, ids=lambda m: m.__name__)
def test_every_field_is_prepared_as_save_prepares_it(model):
    refused = {
        f"{model.__name__}.{field.name}": reason
        for field in model._meta.concrete_fields
        if (reason := rows.unsupported(field))
    }
    assert not refused, (
        f"memories/rows.py would not write these fields as save() does: {refused}. Teach "
        "rows._prepared to make their values as the ORM does (pre_save, db_default) and cover "
        "them in tests/memories/test_rows.py, or write the model through the ORM."
    )


@pytest.mark.parametrize(
    ("field", "refused"),
    [
        (models.DateTimeField(), False),
        (models.DateTimeField(auto_now=True), True),
        (models.DateField(auto_now_add=True), True),
        (models.CharField(max_length=8, db_default="x"), True),
        (models.FileField(), True),
        (models.CharField(max_length=8, default=str), False),
    ],
    ids=["plain", "auto_now", "auto_now_add", "db_default", "own pre_save", "callable default"],
)
def test_the_guard_knows_a_field_save_prepares_its_own_way(field, refused):
    assert (rows.unsupported(field) is not None) is refused


def test_a_refused_field_is_never_written(mind):
    field: models.Field[Any, Any] = models.DateTimeField(auto_now=True)
    field.set_attributes_from_name("touched_at")
    with pytest.raises(TypeError, match="touched_at"):
        rows._prepared(connection, [field], [{"touched_at": AT}])


def test_every_model_written_is_held_here():
    root = Path(__file__).resolve().parents[2]
    calls = re.compile(r"\brows\.(?:insert|upsert|update|update_same)\(\s*(\w+)")
    packages = [p for p in root.iterdir() if (p / "__init__.py").exists() and p.name != "tests"]
    names = {
        name
        for package in packages
        for path in package.rglob("*.py")
        for name in calls.findall(path.read_text())
    }
    assert names, "no call of rows.py found: is the pattern stale?"
    assert names <= {model.__name__ for model in WRITTEN}, (
        f"rows.py writes {sorted(names - {m.__name__ for m in WRITTEN})}: add them to WRITTEN "
        "and compare their rows with save()'s here."
    )
