"""The one list (selectors.memory_list): every filter narrows a search exactly as it narrows
the list, however many match, and the two renderings of a filter (memories/filters.py)
agree."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from core.errors import Invalid
from memories.actors import Actor
from memories.filters import SORTS, MemoryFilters, sorted_memories
from memories.models import Memory, Priority
from memories.rules import UNSET
from memories.selectors import memory_list
from memories.services import memory_upsert, memory_verify

AGENT = Actor(kind="agent", name="mk_test")
PERSON = Actor(kind="user", name="owner@example.com")


@pytest.fixture
def varied(mind):
    """24 memories, every one mentioning "deploy", across every filter's values."""
    now = timezone.now()
    for n in range(24):
        memory = memory_upsert(
            mind=mind,
            actor=AGENT if n % 3 else PERSON,
            category=("fact", "note", "project")[n % 3],
            key=f"k{n:02d}",
            content=f"deploy step {n}" + (" docker" if n % 2 else ""),
            tags=["ops", "ci"] if n % 4 == 0 else ["ops"] if n % 4 == 1 else [],
            priority=("low", "normal", "high", "critical")[n % 4],
            source="tool" if n % 5 == 0 and n % 3 else UNSET,
            expires_at=now - timedelta(days=1) if n % 6 == 5 else None,
        ).memory
        if n % 7 == 0 and not memory.verified:
            memory_verify(memory=memory, actor=PERSON)
    return now


FILTERS = [
    MemoryFilters(
        **dict(zip(("category", "tag", "priority", "verified", "expired"), combo, strict=False))
    )
    for combo in itertools.product(
        (None, "note"), (None, "ops", "ci"), (None, Priority.LOW), (None, False), ("hide", "only")
    )
] + [
    MemoryFilters(source="tool"),
    MemoryFilters(expired="include", verified=True),
    # Several tags: every one must match, whichever field names it.
    MemoryFilters(tags=("ops", "ci")),
    MemoryFilters(tag="ci", tags=("ops",)),
    MemoryFilters(tags=("ops", "nowhere")),
]


@pytest.mark.parametrize("filters", FILTERS, ids=range(len(FILTERS)))
def test_a_search_is_narrowed_exactly_like_the_list(mind, varied, filters):
    listed = memory_list(mind=mind, filters=filters, limit=1000)
    searched = memory_list(mind=mind, filters=filters, q="deploy", limit=1000)
    assert {m.pk for m in searched.memories} == {m.pk for m in listed.memories}
    assert searched.total == listed.total == len(listed.memories)


def test_a_filtered_search_finds_every_match_past_the_first_hundred(mind):
    items = [
        {"category": "fact", "key": f"k{n:03d}", "content": f"postgres tuning note {n}"}
        for n in range(250)
    ]
    from memories.services import memory_upsert_many

    memory_upsert_many(mind=mind, actor=AGENT, items=items)
    for memory in Memory.objects.filter(mind=mind).order_by("key")[:40]:
        memory_verify(memory=memory, actor=PERSON)
    unverified = MemoryFilters(verified=False)
    first = memory_list(mind=mind, filters=unverified, q="postgres", limit=100)
    assert first.total == 210
    last = memory_list(mind=mind, filters=unverified, q="postgres", limit=100, offset=200)
    assert len(last.memories) == 10 and last.total == 210
    beyond = memory_list(mind=mind, filters=unverified, q="postgres", limit=100, offset=300)
    assert beyond.memories == [] and beyond.total == 210


@pytest.mark.parametrize("sort", sorted(SORTS))
def test_a_search_in_a_named_order_is_the_list_in_that_order(mind, varied, sort):
    filters = MemoryFilters(expired="include")
    listed = memory_list(mind=mind, filters=filters, sort=sort, limit=1000)
    searched = memory_list(mind=mind, filters=filters, q="deploy", sort=sort, limit=1000)
    assert [m.pk for m in searched.memories] == [m.pk for m in listed.memories]
    paged = [
        m.pk
        for offset in range(0, 30, 7)
        for m in memory_list(
            mind=mind, filters=filters, q="deploy", sort=sort, limit=7, offset=offset
        ).memories
    ]
    assert paged == [m.pk for m in listed.memories]


def test_expiring_soonest_puts_memories_without_an_expiry_last(mind, varied):
    memories = memory_list(mind=mind, filters=MemoryFilters(expired="include"), sort="expires")
    expiries = [m.expires_at for m in memories.memories]
    assert expiries[0] is not None and expiries[-1] is None
    assert expiries.index(None) == sum(e is not None for e in expiries)


def test_an_unsearchable_query_is_invalid_naming_q(mind):
    with pytest.raises(Invalid) as exc:
        memory_list(mind=mind, q="*")
    assert list(exc.value.fields) == ["q"]


def test_another_minds_memories_never_match(mind, stranger_mind, varied):
    memory_upsert(mind=stranger_mind.mind, actor=AGENT, category="fact", content="deploy")
    found = memory_list(mind=mind, filters=MemoryFilters(expired="include"), q="deploy")
    assert found.total == 24
    assert all(m.mind_id == mind.pk for m in found.memories)


def test_several_tags_must_all_match_and_never_reach_another_mind(mind, varied, stranger_mind):
    memory_upsert(
        mind=stranger_mind.mind,
        actor=AGENT,
        category="note",
        key="theirs",
        content="deploy",
        tags=["ops", "ci"],
    )
    both = memory_list(mind=mind, filters=MemoryFilters(tags=("ops", "ci")), limit=100)
    assert {m.key for m in both.memories} == {f"k{n:02d}" for n in range(0, 24, 4) if n % 6 != 5}
    assert all({"ops", "ci"} <= set(m.tags) for m in both.memories)
    assert memory_list(mind=mind, filters=MemoryFilters(tags=("ops", "nowhere"))).total == 0
    assert MemoryFilters(tags=("ops", "a\x00b")).impossible


@pytest.mark.parametrize("filters", FILTERS, ids=range(len(FILTERS)))
@pytest.mark.parametrize("sort", ["-updated", "expires", "review", "key"])
def test_the_python_rendering_lists_what_the_list_lists(mind, varied, filters, sort):
    listed = memory_list(mind=mind, filters=filters, sort=sort, limit=1000, now=varied)
    everything = Memory.objects.filter(mind=mind)

    kept = [m for m in everything if filters.matches(m, now=varied)]

    assert [m.pk for m in sorted_memories(kept, sort)] == [m.pk for m in listed.memories]
