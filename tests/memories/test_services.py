from __future__ import annotations

import threading
from datetime import timedelta
from functools import partial

import pytest
from django.db import connections

from core.errors import Conflict, Forbidden, Invalid
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryTag, Priority
from memories.services import (
    memory_delete,
    memory_unverify,
    memory_update,
    memory_verify,
)
from tests.factories import upsert

AGENT = Actor(kind="agent", name="mk_abcdefgh")
PERSON = Actor(kind="user", name="owner@example.com")
SYSTEM = Actor.system()


store = partial(upsert, actor=AGENT, content="The sky is blue")


def test_upsert_creates_then_updates_same_row(mind):
    first = store(mind, key="fact_sky")
    second = store(mind, key="fact_sky", content="The sky is grey today")
    assert (first.action, second.action) == ("created", "updated")
    assert second.memory.pk == first.memory.pk
    assert second.memory.updated_at >= first.memory.updated_at
    assert Memory.objects.count() == 1
    assert Memory.objects.get().content == "The sky is grey today"


def test_identical_store_writes_nothing(mind):
    first = store(mind, key="fact_sky", tags=["a"])
    stamp = first.memory.updated_at
    again = store(mind, key="fact_sky", tags=["a"], now=stamp + timedelta(minutes=5))
    assert again.action == "updated"
    assert again.changed is False
    assert Memory.objects.get().updated_at == stamp
    assert MemoryEvent.objects.count() == 1  # the create only


def test_changed_store_gets_new_updated_at(mind):
    first = store(mind, key="fact_sky")
    later = first.memory.updated_at + timedelta(minutes=5)
    store(mind, key="fact_sky", content="new", now=later)
    assert Memory.objects.get().updated_at == later


def test_agent_defaults(mind):
    memory = store(mind).memory
    assert memory.source == "agent"
    assert memory.verified is False
    assert memory.confidence == 0.7
    assert memory.priority == Priority.NORMAL
    assert memory.tags == []


def test_person_memories_are_user_and_verified(mind):
    memory = store(mind, actor=PERSON).memory
    assert memory.source == "user"
    assert memory.verified is True
    assert memory.verified_by == "owner@example.com"
    assert memory.verified_at is not None
    assert memory.confidence == 1.0


@pytest.mark.parametrize("asked", ["user", "system"])
def test_agent_cannot_forge_source(mind, asked):
    result = store(mind, source=asked)
    assert result.memory.source == "agent"
    assert result.memory.verified is False
    assert len(result.warnings) == 1
    assert asked in result.warnings[0]


def test_agent_may_store_tool(mind):
    result = store(mind, source="tool")
    assert result.memory.source == "tool"
    assert result.warnings == []


@pytest.mark.parametrize("asked", ["tool", "system"])
def test_person_may_choose_tool_or_system(mind, asked):
    result = store(mind, actor=PERSON, source=asked)
    assert result.memory.source == asked
    assert result.memory.verified is True
    assert result.warnings == []


def test_person_asking_agent_source_is_stored_as_user(mind):
    result = store(mind, actor=PERSON, source="agent")
    assert result.memory.source == "user"
    assert result.warnings


def test_agent_content_change_clears_verification(mind):
    store(mind, key="k", actor=PERSON)
    memory = store(mind, key="k", content="changed by the agent").memory
    assert memory.verified is False
    assert memory.verified_by == ""
    assert memory.verified_at is None
    assert memory.source == "agent"


def test_agent_tag_change_keeps_verification(mind):
    store(mind, key="k", actor=PERSON)
    memory = store(mind, key="k", tags=["x"]).memory
    assert memory.verified is True
    assert memory.source == "user"


def test_person_edit_verifies(mind):
    created = store(mind, key="k").memory
    memory = memory_update(memory=created, actor=PERSON, priority="high")
    assert memory.verified is True
    assert memory.verified_by == PERSON.name


def test_empty_person_update_verifies_nothing(mind):
    created = store(mind, key="k").memory
    memory = memory_update(memory=created, actor=PERSON)
    assert memory.verified is False


def test_tags_are_normalised_and_rows_kept_in_sync(mind):
    memory = store(mind, tags=["  Docker ", "docker", "CI", "ci", "k8s"]).memory
    assert memory.tags == ["docker", "ci", "k8s"]
    assert sorted(MemoryTag.objects.values_list("tag", flat=True)) == ["ci", "docker", "k8s"]
    memory = memory_update(memory=memory, actor=AGENT, tags=["K8S", "new"])
    assert memory.tags == ["k8s", "new"]
    assert sorted(MemoryTag.objects.values_list("tag", flat=True)) == ["k8s", "new"]
    memory = memory_update(memory=memory, actor=AGENT, tags=[])
    assert MemoryTag.objects.count() == 0


@pytest.mark.parametrize(
    "key", ["", "has space", "tab\there", "new\nline", "nul\x00", "zw\u200bsp", "x" * 201]
)
def test_bad_keys_are_refused(mind, key):
    with pytest.raises(Invalid) as exc:
        store(mind, key=key)
    assert "key" in exc.value.fields


def test_keys_are_case_sensitive(mind):
    store(mind, key="Fact_A")
    store(mind, key="fact_a")
    assert Memory.objects.count() == 2


@pytest.mark.parametrize("content", ["", "   ", "\n\t", "x" * 50_001, "nul\x00byte"])
def test_bad_content_is_refused(mind, content):
    with pytest.raises(Invalid) as exc:
        store(mind, content=content)
    assert "content" in exc.value.fields


def test_content_is_not_stripped(mind):
    memory = store(mind, content="  indented\n").memory
    assert memory.content == "  indented\n"


def test_max_content_is_accepted(mind):
    assert len(store(mind, content="é" * 50_000).memory.content) == 50_000


def test_derived_key_is_stable_and_does_not_duplicate(mind):
    first = store(mind, content="Prefers dark mode in every editor")
    second = store(mind, content="prefers  DARK mode in every editor")
    assert second.action == "updated"
    assert first.memory.pk == second.memory.pk
    assert first.memory.key.startswith("fact_prefers_dark_mode")
    assert Memory.objects.count() == 1


def test_expires_at_omitted_keeps_and_null_clears(mind):
    store(mind, key="k", expires_at=1767225600)
    assert store(mind, key="k", content="x").memory.expires_at is not None
    assert store(mind, key="k", content="x", expires_at=None).memory.expires_at is None


def test_update_to_taken_key_is_conflict(mind):
    store(mind, key="a")
    b = store(mind, key="b").memory
    with pytest.raises(Conflict):
        memory_update(memory=b, actor=AGENT, key="a")
    with pytest.raises(Conflict):
        memory_update(
            memory=store(mind, key="a", category="note").memory, actor=AGENT, category="fact"
        )
    assert sorted(Memory.objects.values_list("key", flat=True)) == ["a", "a", "b"]


def test_update_moves_category_and_key(mind):
    memory = store(mind, key="a").memory
    memory = memory_update(memory=memory, actor=AGENT, category="note", key="note_a")
    assert (memory.category, memory.key) == ("note", "note_a")
    event = MemoryEvent.objects.filter(action="update").get()
    assert event.changes["key"] == {"old": "a", "new": "note_a"}
    assert event.changes["category"] == {"old": "fact", "new": "note"}


def test_every_write_is_audited_with_old_values(mind):
    memory = store(mind, key="k", tags=["a"]).memory
    memory = memory_update(memory=memory, actor=AGENT, content="v2", priority="critical")
    memory = memory_verify(memory=memory, actor=PERSON)
    memory = memory_unverify(memory=memory, actor=PERSON)
    memory_delete(memory=memory, actor=PERSON)
    events = list(MemoryEvent.objects.order_by("id"))
    assert [e.action for e in events] == ["create", "update", "verify", "unverify", "delete"]
    create, update, verify, unverify, delete = events
    assert create.changes["content"] == {"old": None, "new": "The sky is blue"}
    assert create.actor == AGENT.name and create.actor_type == "agent"
    assert update.changes == {
        "content": {"old": "The sky is blue", "new": "v2"},
        "priority": {"old": "normal", "new": "critical"},
    }
    assert verify.changes["verified"] == {"old": False, "new": True}
    assert verify.actor == PERSON.name and verify.actor_type == "user"
    assert unverify.changes["verified_by"] == {"old": PERSON.name, "new": None}
    assert delete.changes["content"] == {"old": "v2", "new": None}
    assert delete.changes["tags"] == {"old": ["a"], "new": None}
    assert delete.changes["created_at"]["old"] is not None
    assert {e.memory_id for e in events} == {memory.pk}
    assert Memory.objects.count() == 0
    assert MemoryTag.objects.count() == 0


def test_only_a_person_verifies(mind):
    memory = store(mind).memory
    for actor in (AGENT, SYSTEM):
        with pytest.raises(Forbidden):
            memory_verify(memory=memory, actor=actor)


def test_unverify_clears_verified_by_and_at(mind):
    memory = store(mind, actor=PERSON).memory
    memory = memory_unverify(memory=memory, actor=PERSON)
    memory.refresh_from_db()
    assert (memory.verified, memory.verified_by, memory.verified_at) == (False, "", None)


def test_verify_twice_records_once(mind):
    memory = store(mind).memory
    memory_verify(memory=memory, actor=PERSON)
    memory_verify(memory=memory, actor=PERSON)
    assert MemoryEvent.objects.filter(action="verify").count() == 1


def test_explicit_confidence_and_priority(mind):
    memory = store(mind, confidence=0.25, priority="HIGH").memory
    assert memory.confidence == 0.25
    assert memory.priority == Priority.HIGH
    with pytest.raises(Invalid):
        store(mind, priority="urgent")
    with pytest.raises(Invalid):
        store(mind, confidence=1.5)
    with pytest.raises(Invalid):
        store(mind, category="thoughts")


@pytest.mark.django_db(transaction=True)
def test_concurrent_upserts_on_one_key_make_one_row(mind):
    errors: list[BaseException] = []
    results = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        try:
            barrier.wait()
            results.append(store(mind, key="race", content=f"writer {i}").action)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == ["created"] + ["updated"] * 7
    assert Memory.objects.filter(key="race").count() == 1
    assert MemoryEvent.objects.filter(action="create").count() == 1


@pytest.mark.django_db(transaction=True)
def test_writers_of_one_mind_take_turns(mind):
    """A store waits while another write of the mind is in its transaction: the lookup it
    makes under the lock is the truth (PostgreSQL: the mind's row lock; SQLite: the
    database's write lock)."""
    from memories import services

    store(mind, key="race", content="first")
    holding, release, finished = threading.Event(), threading.Event(), threading.Event()
    outcome: list[str] = []

    def hold() -> None:
        try:
            with services._write_lock(mind.pk):
                holding.set()
                release.wait(10)
        finally:
            connections.close_all()

    def write() -> None:
        try:
            outcome.append(store(mind, key="race", content="second").action)
            finished.set()
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert not finished.wait(0.5), "the store did not wait for the mind's write lock"
    finally:
        release.set()
        holder.join(10)
        writer.join(10)
    assert outcome == ["updated"]
    assert Memory.objects.get(key="race").content == "second"
