"""The history budget: what one mind's audit trail holds of earlier values stays within
SYNAPSE_MAX_HISTORY_BYTES. A write is never refused for it: the oldest events' values are
folded, the rows stay, and whatever is kept stays exact.

Budgets are small here (override_settings) so the suite stays fast; the write path reads
them at each write.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Sum
from django.test import override_settings

from core.errors import Conflict
from memories.actors import Actor
from memories.audit import FOLDED, FOLDED_VALUE, changes_size, memory_history
from memories.models import Memory, MemoryEvent
from memories.selectors import diff_until, memory_diff, mind_usage
from memories.services import (
    memory_delete,
    memory_restore,
    memory_undo,
    memory_update,
    memory_upsert_many,
    memory_verify,
    mind_import,
)
from minds.models import Mind
from tests.factories import remember

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="olive@example.com")
BUDGET = 6_000


def history(mind: Mind) -> int:
    mind.refresh_from_db()
    return mind.history_bytes


def counted(mind: Mind) -> int:
    """What the mind's trail holds, counted the slow way: every unfolded event's values."""
    events = MemoryEvent.objects.filter(mind=mind)
    for event in events:
        folded = all(change == FOLDED for change in event.changes.values())
        assert event.size == (0 if folded else changes_size(event.changes)), event.changes
    return sum(changes_size(e.changes) for e in events if e.size)


def text(n: int, size: int = 500) -> str:
    return f"{n:04d} " + "x" * (size - 5)


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET)
def test_history_never_passes_its_budget_the_oldest_are_folded_the_newest_kept(mind):
    memory = remember(mind, "fact_a", text(0), actor=AGENT)
    for n in range(1, 40):
        memory = memory_update(memory=memory, actor=AGENT, content=text(n))
        assert history(mind) == counted(mind) <= BUDGET
    events = list(MemoryEvent.objects.filter(memory_id=memory.pk).order_by("at", "id"))
    assert len(events) == 40  # every row stays: who, what, when, which fields
    folded = [e for e in events if e.size == 0]
    kept = [e for e in events if e.size]
    assert folded and kept
    assert events[: len(folded)] == folded  # oldest first
    assert folded[0].action == "create" and set(folded[0].changes) >= {"content", "tags"}
    assert all(change == FOLDED for e in folded for change in e.changes.values())
    # The newest values are exact.
    assert events[-1].changes["content"] == {"old": text(38), "new": text(39)}
    assert history(mind) > BUDGET - 2 * changes_size(events[-1].changes)  # no more than needed


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET)
def test_a_kept_version_restores_exactly_and_a_folded_one_is_refused(mind):
    memory = remember(mind, "fact_a", text(0), actor=AGENT, tags=["first"])
    for n in range(1, 30):
        memory = memory_update(memory=memory, actor=AGENT, content=text(n), tags=[f"t{n}"])
    entries = memory_history(memory=memory)
    # The version before the latest is held by the latest row's old values.
    previous = entries[1]
    assert not previous.folded
    restored = memory_restore(memory=memory, actor=PERSON, event_id=previous.event.pk)
    assert restored.changed
    memory.refresh_from_db()
    assert (memory.content, memory.tags) == (text(28), ["t28"])

    first = entries[-1]
    assert first.number == 1 and first.folded == ["content", "tags"]
    assert first.restorable["content"] is FOLDED_VALUE
    events = MemoryEvent.objects.count()
    with pytest.raises(Conflict, match=r"Version 1 can no longer be restored: its content, tags"):
        memory_restore(memory=memory, actor=PERSON, event_id=first.event.pk)
    memory.refresh_from_db()
    assert (memory.content, memory.tags) == (text(28), ["t28"])  # nothing written
    assert MemoryEvent.objects.count() == events


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=1_000)
def test_a_write_larger_than_the_whole_budget_is_stored_and_folds_its_own_values(mind):
    memory = remember(mind, "fact_a", "x" * 5_000, actor=AGENT)
    memory.refresh_from_db()
    assert memory.content == "x" * 5_000  # never refused for its history
    assert history(mind) == counted(mind) == 0
    (event,) = MemoryEvent.objects.filter(mind=mind)
    assert event.action == "create" and event.changes["content"] == FOLDED


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET)
def test_the_counter_follows_every_kind_of_write(mind):
    a = remember(mind, "a", text(1), actor=AGENT)
    memory_upsert_many(
        mind=mind,
        actor=AGENT,
        items=[
            *({"category": "fact", "key": f"k{i}", "content": text(i, 300)} for i in range(20)),
            {"category": "fact", "key": "k1", "content": "again"},  # the same memory again
            {"category": "?"},  # refused: no row, nothing counted
        ],
    )
    assert history(mind) == counted(mind) <= BUDGET
    mind_import(mind=mind, actor=PERSON, records=[{"category": "note", "content": text(2)}])
    memory_verify(memory=a, actor=PERSON)
    memory_delete(memory=a, actor=PERSON)
    assert history(mind) == counted(mind) <= BUDGET
    memory_undo(mind=mind, actor=PERSON, memory_id=a.pk, action="delete")
    for memory in Memory.objects.filter(mind=mind):
        memory_delete(memory=memory, actor=AGENT)
    assert history(mind) == counted(mind) <= BUDGET
    assert MemoryEvent.objects.filter(mind=mind).count() == 1 + 21 + 1 + 1 + 1 + 1 + 22


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET)
def test_a_folded_tombstone_still_tells_diff_of_the_deletion(mind):
    gone = remember(mind, "fact_gone", text(0), actor=AGENT)
    since = gone.created_at
    memory_delete(memory=gone, actor=AGENT)
    kept = remember(mind, "fact_kept", text(1), actor=AGENT)
    for n in range(2, 30):
        kept = memory_update(memory=kept, actor=AGENT, content=text(n))
    tombstone = MemoryEvent.objects.get(memory_id=gone.pk, action="delete")
    assert tombstone.size == 0 and tombstone.changes["content"] == FOLDED
    assert (tombstone.category, tombstone.key) == ("fact", "fact_gone")
    diff = memory_diff(mind=mind, since=since, until=diff_until(mind=mind))
    assert list(diff.deleted) == [gone.pk]


def test_undo_of_a_delete_whose_values_were_folded_is_refused(mind):
    gone = remember(mind, "fact_gone", text(0), actor=PERSON)
    memory_delete(memory=gone, actor=PERSON)
    with override_settings(SYNAPSE_MAX_HISTORY_BYTES=1):
        remember(mind, "fact_other", "y", actor=AGENT)  # folds everything the mind holds
    with pytest.raises(Conflict, match="were folded"):
        memory_undo(mind=mind, actor=PERSON, memory_id=gone.pk, action="delete")
    assert not Memory.objects.filter(mind=mind, key="fact_gone").exists()


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET)
def test_folding_one_mind_never_touches_another(mind, stranger_mind):
    theirs = remember(stranger_mind.mind, "fact_a", text(0), actor=AGENT)
    for n in range(1, 8):
        theirs = memory_update(memory=theirs, actor=AGENT, content=text(n))
    before = list(
        MemoryEvent.objects.filter(mind=stranger_mind.mind).values_list("pk", "size", "changes")
    )
    held = history(stranger_mind.mind)
    memory = remember(mind, "fact_a", text(0), actor=AGENT)
    for n in range(1, 40):
        memory = memory_update(memory=memory, actor=AGENT, content=text(n))
    assert MemoryEvent.objects.filter(mind=mind, size=0).exists()
    after = list(
        MemoryEvent.objects.filter(mind=stranger_mind.mind).values_list("pk", "size", "changes")
    )
    assert after == before
    assert history(stranger_mind.mind) == held == counted(stranger_mind.mind)


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=0)
def test_zero_means_no_history_limit(mind):
    memory = remember(mind, "fact_a", text(0), actor=AGENT)
    for n in range(1, 20):
        memory = memory_update(memory=memory, actor=AGENT, content=text(n))
    assert not MemoryEvent.objects.filter(mind=mind, size=0).exists()
    assert history(mind) == counted(mind) > 10_000


@override_settings(
    SYNAPSE_MAX_HISTORY_BYTES=BUDGET, SYNAPSE_MAX_MIND_BYTES=9_000, SYNAPSE_MAX_MEMORIES_PER_MIND=7
)
def test_the_usage_shows_history_beside_its_budget(mind):
    remember(mind, "fact_a", "grüße", actor=AGENT)
    mind.refresh_from_db()
    usage = mind_usage(mind=mind)
    assert usage == {
        "memories": 1,
        "max_memories": 7,
        "bytes": len("grüße".encode()),
        "max_bytes": 9_000,
        "history_bytes": counted(mind),
        "max_history_bytes": BUDGET,
    }


def test_a_mind_over_budget_after_an_upgrade_is_folded_by_its_next_write(mind):
    memory = remember(mind, "fact_a", text(0), actor=AGENT)
    for n in range(1, 20):
        memory = memory_update(memory=memory, actor=AGENT, content=text(n))
    with override_settings(SYNAPSE_MAX_HISTORY_BYTES=BUDGET):
        assert history(mind) > BUDGET
        memory_verify(memory=memory, actor=PERSON)  # any write
        assert history(mind) == counted(mind) <= BUDGET


def test_the_migrations_measure_the_events_and_count_each_minds_history(
    mind, stranger_mind, monkeypatch
):
    memory = remember(mind, "fact_a", "grüße", actor=AGENT)
    memory_update(memory=memory, actor=AGENT, content="日本", tags=["t"])
    memory_delete(memory=memory, actor=AGENT)
    remember(stranger_mind.mind, "fact_b", "x", actor=AGENT)
    expected = {e.pk: changes_size(e.changes) for e in MemoryEvent.objects.all()}
    MemoryEvent.objects.update(size=0)  # as before the upgrade
    Mind.objects.update(history_bytes=0)
    # What the migrations use of a schema editor (a real one cannot open inside a test's
    # transaction on SQLite).
    editor = SimpleNamespace(connection=connection, execute=connection.cursor().execute)
    measure = importlib.import_module("memories.migrations.0011_memory_event_size")
    count = importlib.import_module("minds.migrations.0004_mind_history_bytes")
    monkeypatch.setattr(measure, "BATCH", 2)  # several batches
    measure.measure_events(apps, editor)
    count.count_history(apps, editor)
    assert dict(MemoryEvent.objects.values_list("pk", "size")) == expected
    for one in (mind, stranger_mind.mind):
        total = MemoryEvent.objects.filter(mind=one).aggregate(s=Sum("size"))["s"]
        assert history(one) == counted(one) == total > 0


BEFORE_THE_BUDGET = [
    ("minds", "0003_forget_keys_in_sessions"),
    ("memories", "0010_idempotency_record_moves_to_api"),
]


@pytest.mark.django_db(transaction=True)
def test_an_upgrade_measures_the_trail_it_finds(mind, stranger_mind):
    memory = remember(mind, "fact_a", "grüße", actor=AGENT)
    memory_update(memory=memory, actor=AGENT, content="日本", tags=["t"])
    remember(stranger_mind.mind, "fact_b", "x", actor=AGENT)
    expected = {e.pk: changes_size(e.changes) for e in MemoryEvent.objects.all()}

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_THE_BUDGET)
    old_apps = executor.loader.project_state(BEFORE_THE_BUDGET).apps
    old_event = old_apps.get_model("memories", "MemoryEvent")
    assert old_event.objects.count() == 3  # the rows, without a size
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert dict(MemoryEvent.objects.values_list("pk", "size")) == expected
    for one in (mind, stranger_mind.mind):
        assert history(one) == counted(one) > 0
