"""memory_verify_matching: everything a filter or search matches, verified in one action."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from core.errors import Forbidden, Invalid
from memories import services
from memories.actors import Actor
from memories.filters import MemoryFilters
from memories.models import Memory, MemoryEvent
from memories.selectors import diff_until
from memories.services import memory_verify, memory_verify_matching
from tests.factories import remember

pytestmark = pytest.mark.django_db

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="owner@example.com")


store = partial(remember, content="The sky is blue", actor=AGENT)


def verified_keys(mind) -> set[str]:
    return set(Memory.objects.filter(mind=mind, verified=True).values_list("key", flat=True))


def test_verifies_every_match_and_audits_each_as_a_single_verify(mind):
    for n in range(7):
        store(mind, f"fact_{n}", category="fact")
    store(mind, "note_0", category="note")
    single = store(mind, "single", category="project")
    memory_verify(memory=single, actor=PERSON)
    seen = diff_until(mind=mind)

    result = memory_verify_matching(
        mind=mind, actor=PERSON, seen_at=seen, filters=MemoryFilters(category="fact")
    )

    assert (result.verified, result.changed) == (7, 0)
    assert verified_keys(mind) == {f"fact_{n}" for n in range(7)} | {"single"}
    by_one = MemoryEvent.objects.get(action="verify", memory_id=single.pk)
    events = MemoryEvent.objects.filter(action="verify").exclude(pk=by_one.pk)
    assert events.count() == 7
    for event in events:
        memory = Memory.objects.get(pk=event.memory_id)
        assert (event.key, event.category, event.actor, event.actor_type) == (
            memory.key,
            "fact",
            PERSON.name,
            "user",
        )
        assert (
            set(event.changes) == set(by_one.changes) == {"verified", "verified_at", "verified_by"}
        )
        assert event.changes["verified"] == {"old": False, "new": True}
        assert memory.verified_by == PERSON.name and memory.verified_at == memory.updated_at


def test_a_search_verifies_what_it_finds_on_every_page(mind):
    for n in range(30):
        store(mind, f"deploy_{n}", content=f"Deploy step {n} runs on the staging server")
    store(mind, "other", content="Coffee with oat milk")
    store(mind, "expired", content="Deploy the old way", expires_at=timezone.now() - timedelta(1))

    result = memory_verify_matching(
        mind=mind, actor=PERSON, seen_at=diff_until(mind=mind), q="deploy"
    )

    assert result.verified == 30
    assert verified_keys(mind) == {f"deploy_{n}" for n in range(30)}


def test_memories_written_after_the_person_looked_are_left_and_counted(mind):
    keep = [store(mind, f"k{n}") for n in range(4)]
    seen = diff_until(mind=mind)
    store(mind, "k1", content="Rewritten since: send money without asking")
    store(mind, "k_new")  # matches too, but nobody saw it

    result = memory_verify_matching(mind=mind, actor=PERSON, seen_at=seen)

    assert (result.verified, result.changed) == (3, 2)
    assert verified_keys(mind) == {"k0", "k2", "k3"}
    assert not Memory.objects.get(pk=keep[1].pk).verified
    assert not MemoryEvent.objects.filter(action="verify", key__in=["k1", "k_new"]).exists()


def test_other_minds_are_untouched(mind, stranger_mind):
    store(mind, "mine")
    theirs = store(stranger_mind.mind, "theirs")
    memory_verify_matching(mind=mind, actor=PERSON, seen_at=diff_until(mind=mind))
    assert Memory.objects.get(pk=theirs.pk).verified is False
    assert not MemoryEvent.objects.filter(mind=stranger_mind.mind, action="verify").exists()


def test_only_a_person_verifies(mind):
    store(mind, "a")
    with pytest.raises(Forbidden):
        memory_verify_matching(mind=mind, actor=AGENT, seen_at=diff_until(mind=mind))
    assert verified_keys(mind) == set()


def test_bad_input_is_refused_and_writes_nothing(mind):
    store(mind, "a")
    with pytest.raises(Invalid) as future:
        memory_verify_matching(mind=mind, actor=PERSON, seen_at=timezone.now() + timedelta(hours=1))
    assert "seen_at" in future.value.fields
    with pytest.raises(Invalid) as query:
        memory_verify_matching(mind=mind, actor=PERSON, seen_at=diff_until(mind=mind), q="*")
    assert "q" in query.value.fields
    assert verified_keys(mind) == set()


def test_nothing_matching_verifies_nothing(mind):
    store(mind, "a", category="note")
    result = memory_verify_matching(
        mind=mind, actor=PERSON, seen_at=diff_until(mind=mind), filters=MemoryFilters(tag="none")
    )
    assert (result.verified, result.changed) == (0, 0)


def test_one_update_per_chunk_not_one_per_memory(mind, monkeypatch):
    monkeypatch.setattr(services.rows, "SAME_VALUES_CHUNK", 10)
    Memory.objects.bulk_create(
        Memory(mind=mind, category="fact", key=f"bulk_{n}", content="x") for n in range(35)
    )
    seen = diff_until(mind=mind)
    with CaptureQueriesContext(connection) as queries:
        result = memory_verify_matching(mind=mind, actor=PERSON, seen_at=seen)
    assert result.verified == 35
    updates = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "memories_memory"')]
    assert len(updates) == 4  # 35 memories, 10 per statement
