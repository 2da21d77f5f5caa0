"""memory_upsert_many stores exactly what memory_upsert item by item stores, in bulk."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.errors import Invalid
from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryTag
from memories.rules import BULK_MAX_ITEMS, UNSET
from memories.services import ItemRefused, memory_upsert, memory_upsert_many, mind_import
from minds.services import mind_create
from synapse_site.ids import SHARED_LENGTH

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="olive@example.com")
NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)

SEED = [
    {"category": "fact", "key": "verified", "content": "checked", "actor": PERSON},
    {"category": "fact", "key": "same", "content": "same", "tags": ["a"]},
    {"category": "note", "key": "retag", "content": "r", "tags": ["x", "y"]},
]
ITEMS = [
    {"category": "fact", "key": "new", "content": "n", "tags": ["B", "a", "b"], "priority": "high"},
    {"category": "fact", "key": "verified", "content": "agent changed it"},
    {"category": "fact", "key": "same", "content": "same"},
    {"category": "note", "key": "retag", "content": "r", "tags": ["y", "z"]},
    {"category": "fact", "content": "no key given", "source": "user"},
    {"category": "fact", "key": "tool", "content": "t", "source": "tool", "confidence": 0.4},
    {"category": "fact", "key": "exp", "content": "e", "expires_at": 4102444800},
    {"category": "fact", "key": "new", "content": "n2", "expires_at": None},
]


def _row(m: Memory) -> tuple:
    return (
        m.category,
        m.key,
        m.content,
        m.tags,
        m.priority,
        m.source,
        m.verified,
        m.confidence,
        m.expires_at,
        m.verified_by,
        m.verified_at,
        m.created_at,
        m.updated_at,
    )


def _state(mind) -> tuple:
    memories = sorted(_row(m) for m in Memory.objects.filter(mind=mind))
    tags = sorted(MemoryTag.objects.filter(mind=mind).values_list("memory__key", "tag"))
    events = sorted(
        (e.key, e.action, e.actor, e.actor_type, str(e.changes), e.at)
        for e in MemoryEvent.objects.filter(mind=mind)
    )
    return memories, tags, events


def _seeded(owner, name):
    mind, _ = mind_create(owner=owner, name=name)
    for seed in SEED:
        fields = dict(seed)
        memory_upsert(mind=mind, actor=fields.pop("actor", AGENT), now=NOW, **fields)
    return mind


@pytest.mark.parametrize("actor", [AGENT, PERSON], ids=["agent", "person"])
def test_bulk_equals_one_by_one(owner, actor):
    one_by_one = _seeded(owner, "one by one")
    bulk = _seeded(owner, "bulk")
    later = datetime(2026, 5, 2, tzinfo=UTC)
    expected = []
    for item in ITEMS:
        fields = {"expires_at": UNSET, **item}
        result = memory_upsert(mind=one_by_one, actor=actor, now=later, **fields)
        expected.append((result.action, result.changed, result.memory.key, result.warnings))
    outcomes = memory_upsert_many(mind=bulk, actor=actor, items=ITEMS, now=later)
    assert [(o.action, o.changed, o.memory.key, o.warnings) for o in outcomes] == expected
    assert _state(bulk) == _state(one_by_one)


def test_refused_items_are_reported_and_write_nothing(owner):
    mind, _ = mind_create(owner=owner, name="m")
    outcomes = memory_upsert_many(
        mind=mind,
        actor=AGENT,
        items=[{"category": "fact", "content": "ok"}, {"category": "fact", "content": 5}],
    )
    assert outcomes[0].action == "created"
    assert isinstance(outcomes[1], ItemRefused)
    assert "content" in outcomes[1].error.fields
    assert Memory.objects.filter(mind=mind).count() == 1


def test_one_call_is_stamped_with_one_time(owner):
    """Taken under the write lock: created, updated, verified and the audit row agree."""
    mind, _ = mind_create(owner=owner, name="m")
    outcomes = memory_upsert_many(
        mind=mind,
        actor=PERSON,
        items=[{"category": "fact", "content": "x"}, {"category": "fact", "content": "y"}],
    )
    stamps = set()
    for outcome in outcomes:
        memory = Memory.objects.get(pk=outcome.memory.pk)
        stamps |= {memory.created_at, memory.updated_at, memory.verified_at}
        stamps.add(MemoryEvent.objects.get(memory_id=memory.pk).at)
    assert len(stamps) == 1


def test_an_item_repeating_a_key_applies_after_the_first(owner):
    mind, _ = mind_create(owner=owner, name="m")
    outcomes = memory_upsert_many(
        mind=mind,
        actor=AGENT,
        items=[
            {"category": "fact", "key": "k", "content": "first", "tags": ["a"]},
            {"category": "fact", "key": "k", "content": "second", "tags": ["b"]},
            {"category": "fact", "key": "k", "content": "second", "tags": ["b"]},
        ],
    )
    assert [(o.action, o.changed) for o in outcomes] == [
        ("created", True),
        ("updated", True),
        ("updated", False),
    ]
    memory = Memory.objects.get(mind=mind)
    assert (memory.content, memory.tags) == ("second", ["b"])
    assert list(MemoryTag.objects.filter(mind=mind).values_list("tag", flat=True)) == ["b"]
    events = MemoryEvent.objects.filter(mind=mind).order_by("id")
    assert [e.action for e in events] == ["create", "update"]
    assert events[1].changes["content"] == {"old": "first", "new": "second"}


def test_the_new_memories_of_one_call_share_a_random_id_start(owner):
    """So that each index keyed by the memory id takes the batch as one run (random_ids)."""
    mind, _ = mind_create(owner=owner, name="m")
    items = [{"category": "fact", "key": f"k{n}", "content": f"c{n}"} for n in range(50)]
    first = [o.memory.pk for o in memory_upsert_many(mind=mind, actor=AGENT, items=items)]
    items = [{**item, "key": f"other-{item['key']}"} for item in items]
    second = [o.memory.pk for o in memory_upsert_many(mind=mind, actor=AGENT, items=items)]
    assert len(set(first + second)) == 100
    assert set(Memory.objects.filter(mind=mind).values_list("pk", flat=True)) == {*first, *second}
    start = len("mem_") + SHARED_LENGTH
    assert len({pk[:start] for pk in first}) == len({pk[:start] for pk in second}) == 1
    assert first[0][:start] != second[0][:start]


@pytest.mark.parametrize("write", ["sync", "import"])
def test_too_many_items_are_refused_before_any_is_judged(mind, monkeypatch, write):
    judged = []
    clean = services.memory_body_clean
    monkeypatch.setattr(
        services, "memory_body_clean", lambda *a, **kw: judged.append(1) or clean(*a, **kw)
    )
    items = [{"category": "note", "content": f"n{i}"} for i in range(BULK_MAX_ITEMS + 1)]
    with pytest.raises(Invalid) as refused:
        if write == "sync":
            memory_upsert_many(mind=mind, actor=AGENT, items=items)
        else:
            mind_import(mind=mind, actor=PERSON, records=items)
    assert refused.value.fields["memories"] == [
        f"At most {BULK_MAX_ITEMS} memories per call, got {BULK_MAX_ITEMS + 1}: "
        "send them in several calls."
    ]
    assert judged == []
    assert not Memory.objects.filter(mind=mind).exists()
    # The most one call takes still goes through.
    outcomes = mind_import(mind=mind, actor=PERSON, records=items[:BULK_MAX_ITEMS])
    assert len(outcomes) == len(judged) == BULK_MAX_ITEMS
