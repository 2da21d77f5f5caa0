"""What one mind may hold: its memories and the bytes of their content, counted as it writes.

Quotas are small here (override_settings) so the suite stays fast; the write path reads
them at each write.
"""

from __future__ import annotations

import importlib
from functools import partial
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Count
from django.test import override_settings

from core.errors import QuotaExceeded
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from memories.rules import content_bytes
from memories.services import (
    ItemRefused,
    memory_delete,
    memory_store,
    memory_update,
    memory_upsert_many,
    mind_import,
)
from minds.models import Mind
from minds.services import mind_update
from tests.factories import remember

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="olive@example.com")


store = partial(remember, actor=AGENT)


def usage(mind) -> tuple[int, int]:
    mind.refresh_from_db()
    return mind.stored_memories, mind.stored_bytes


def counted(mind) -> tuple[int, int]:
    """What the mind holds, counted the slow way."""
    contents = Memory.objects.filter(mind=mind).values_list("content", flat=True)
    return len(contents), sum(content_bytes(c) for c in contents)


def test_counters_follow_every_write(mind):
    a = store(mind, "a", "hello")
    store(mind, "b", "grüße, 日本")  # bytes, not characters
    assert usage(mind) == counted(mind) == (2, 5 + len("grüße, 日本".encode()))
    memory_update(memory=a, actor=AGENT, content="a longer text")
    memory_update(memory=a, actor=AGENT, tags=["t"])  # no content change
    memory_upsert_many(
        mind=mind,
        actor=AGENT,
        items=[
            {"category": "fact", "key": "c", "content": "ccc"},
            {"category": "fact", "key": "c", "content": "cc"},  # the same memory again
            {"category": "fact", "key": "b", "content": "b"},
            {"category": "?"},
        ],
    )
    mind_import(mind=mind, actor=PERSON, records=[{"category": "note", "content": "restored"}])
    memory_delete(memory=a, actor=AGENT)
    assert usage(mind) == counted(mind) == (3, 1 + 2 + 8)


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=3)
def test_a_store_past_the_memory_quota_is_refused_and_writes_nothing(mind):
    for key in "abc":
        store(mind, key)
    events = MemoryEvent.objects.count()
    with pytest.raises(QuotaExceeded) as refused:
        store(mind, "d")
    assert "at most 3 (SYNAPSE_MAX_MEMORIES_PER_MIND)" in refused.value.detail
    assert refused.value.code == "quota_exceeded"
    assert Memory.objects.filter(mind=mind).count() == 3
    assert MemoryEvent.objects.count() == events
    assert usage(mind) == (3, 3)
    # A full mind still updates what it holds, and makes room by deleting.
    store(mind, "a", "y")
    memory_delete(memory=Memory.objects.get(mind=mind, key="b"), actor=AGENT)
    store(mind, "d")
    assert usage(mind) == counted(mind) == (3, 3)


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=5)
def test_a_sync_or_import_crossing_the_quota_is_refused_whole(mind):
    store(mind, "a")
    items = [{"category": "fact", "key": k, "content": "x"} for k in "abcdef"]  # 5 new
    with pytest.raises(QuotaExceeded, match="would add 5"):
        memory_upsert_many(mind=mind, actor=AGENT, items=items)
    with pytest.raises(QuotaExceeded):
        mind_import(mind=mind, actor=PERSON, records=items)
    assert Memory.objects.filter(mind=mind).count() == 1
    assert MemoryEvent.objects.filter(mind=mind).count() == 1
    # Four fit; refused items are not counted.
    outcomes = memory_upsert_many(mind=mind, actor=AGENT, items=[*items[:5], {"category": "?"}])
    assert isinstance(outcomes[-1], ItemRefused)
    assert usage(mind) == counted(mind) == (5, 5)


@override_settings(SYNAPSE_MAX_MIND_BYTES=20)
def test_the_bytes_quota_refuses_growth_but_never_shrinking(mind):
    memory = store(mind, "a", "0123456789")
    store(mind, "b", "é" * 5)  # 10 bytes in UTF-8: the mind is full
    with pytest.raises(QuotaExceeded) as refused:
        memory_update(memory=memory, actor=AGENT, content="0123456789!")
    assert "at most 20 (SYNAPSE_MAX_MIND_BYTES)" in refused.value.detail
    assert "would add 1" in refused.value.detail
    with pytest.raises(QuotaExceeded):
        store(mind, "c", "x")
    memory_update(memory=memory, actor=AGENT, content="012345678")  # smaller: fine
    memory_update(memory=memory, actor=AGENT, content="abcdefghi")  # as large: fine
    store(mind, "c", "x")
    assert usage(mind) == counted(mind) == (3, 20)


def test_a_mind_over_its_quota_after_an_upgrade_can_shrink_but_not_grow(mind):
    for key in "abcd":
        store(mind, key, "some text")
    with override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=2, SYNAPSE_MAX_MIND_BYTES=10):
        with pytest.raises(QuotaExceeded):
            store(mind, "e")
        with pytest.raises(QuotaExceeded):
            store(mind, "a", "some longer text")
        store(mind, "a", "short")
        store(mind, "b", "some text", tags=["kept"])  # same size, other fields
        memory_delete(memory=Memory.objects.get(mind=mind, key="c"), actor=AGENT)
    assert usage(mind) == counted(mind) == (3, 5 + 9 + 9)


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=1)
def test_one_full_mind_does_not_limit_another(mind, stranger_mind):
    store(mind, "a")
    with pytest.raises(QuotaExceeded):
        store(mind, "b")
    store(stranger_mind.mind, "a")
    assert usage(stranger_mind.mind) == (1, 1)


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=0, SYNAPSE_MAX_MIND_BYTES=0)
def test_zero_means_no_quota(mind):
    memory_upsert_many(
        mind=mind,
        actor=AGENT,
        items=[{"category": "fact", "key": f"k{i}", "content": "x" * 100} for i in range(50)],
    )
    assert usage(mind) == (50, 5000)


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=1)
def test_a_refused_store_body_is_judged_before_the_quota(mind):
    store(mind, "a")
    with pytest.raises(Exception) as refused:
        memory_store(mind=mind, actor=AGENT, body={"category": "?", "content": "x"})
    assert refused.value.code == "invalid"


def test_saving_a_mind_read_earlier_keeps_the_counters(mind):
    stale = Mind.objects.get(pk=mind.pk)
    store(mind, "a", "hello")
    stale.name = "Renamed"
    stale.save()  # as the admin's form does
    mind_update(mind=stale, description="about")
    assert usage(mind) == (1, 5)
    assert mind.name == "Renamed"


def test_the_migration_counts_what_minds_already_hold(mind, stranger_mind):
    store(mind, "a", "grüße")
    store(mind, "b", "xy")
    Mind.objects.update(stored_memories=0, stored_bytes=0)  # as before the upgrade
    migration = importlib.import_module("minds.migrations.0002_mind_usage")
    # What the migration uses of a schema editor (a real one cannot open inside a test's
    # transaction on SQLite).
    editor = SimpleNamespace(connection=connection, execute=connection.cursor().execute)
    migration.count_usage(apps, editor)
    assert usage(mind) == counted(mind) == (2, 2 + len("grüße".encode()))
    assert usage(stranger_mind.mind) == (0, 0)
    by_mind = dict(Memory.objects.values_list("mind").annotate(n=Count("pk")))
    assert by_mind == {mind.pk: 2}
