"""fetch(): instances from written-out SQL, converted exactly as the ORM converts them."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from django.db import connection, connections

from memories.models import Memory
from minds.models import Mind
from synapse_site.rawsql import fetch, select_columns
from tests.api.memory_helpers import remember

pytestmark = pytest.mark.django_db(transaction=True)


def _sql(where: str) -> str:
    table = connection.ops.quote_name(Memory._meta.db_table)
    return f'SELECT {select_columns(Memory)} FROM {table} WHERE {where} ORDER BY "id"'


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_rows_come_back_as_the_orm_reads_them(mind):
    remember(mind, "plain", "text", tags=["b", "a"])
    remember(
        mind,
        "expiring",
        "text",
        tags=[],
        priority="critical",
        confidence=0.25,
        expires_at=datetime(2031, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
    )
    fetched = fetch(Memory, _sql('"mind_id" = %s'), [mind.pk])
    by_orm = list(Memory.objects.filter(mind=mind).order_by("id"))
    assert [_values(m) for m in fetched] == [_values(m) for m in by_orm]
    assert {type(m.expires_at) for m in fetched} == {datetime, type(None)}
    assert all(m.created_at.tzinfo is not None for m in fetched)
    assert all(m.verified is False for m in fetched)  # a bool, not SQLite's 0
    assert all(not m._state.adding and m._state.db == "default" for m in fetched)


def test_no_row_is_an_empty_list(mind):
    assert fetch(Memory, _sql('"id" = %s'), ["mem_missing"]) == []


def test_another_thread_uses_its_own_connection(mind):
    remember(mind, "k", "text")
    fetch(Memory, _sql('"mind_id" = %s'), [mind.pk])  # this thread's plan exists now
    seen = []

    def other():
        try:
            seen.append(fetch(Mind, f"SELECT {select_columns(Mind)} FROM minds_mind", []))
            seen.append(fetch(Memory, _sql('"mind_id" = %s'), [mind.pk]))
        finally:
            connections.close_all()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert [m.pk for m in seen[0]] == [mind.pk]
    assert [m.key for m in seen[1]] == ["k"]
