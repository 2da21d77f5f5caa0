"""A memory's version (memories/versions.py) and the services' `expected_version`: a write
that names a version other than the stored one raises Stale and writes nothing."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from core.errors import Invalid, Stale
from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from memories.services import (
    memory_change,
    memory_delete,
    memory_unverify,
    memory_update,
    memory_verify,
    memory_verify_many,
)
from memories.versions import memory_version
from tests.factories import remember

AGENT = Actor(kind="agent", name="mk_abcdefgh")
PERSON = Actor(kind="user", name="owner@example.com")


store = partial(
    remember, key="ui_theme", content="User prefers dark mode.", category="preference", actor=AGENT
)


def stored(memory: Memory) -> tuple[dict, int]:
    """The memory's row and its number of audit rows: what a refused write leaves alone."""
    row = Memory.objects.values().get(pk=memory.pk)
    return row, MemoryEvent.objects.filter(memory_id=memory.pk).count()


WRITES = {
    "change": lambda m, v: memory_change(
        memory=m, actor=PERSON, body={"content": "Mine"}, expected_version=v
    ),
    "update": lambda m, v: memory_update(memory=m, actor=PERSON, tags=["x"], expected_version=v),
    "delete": lambda m, v: memory_delete(memory=m, actor=PERSON, expected_version=v),
    "verify": lambda m, v: memory_verify(memory=m, actor=PERSON, expected_version=v),
    "unverify": lambda m, v: memory_unverify(memory=m, actor=PERSON, expected_version=v),
}


@pytest.mark.parametrize("write", list(WRITES))
def test_a_stale_expected_version_raises_and_writes_nothing(mind, write):
    memory = store(mind)
    if write == "unverify":
        memory = memory_verify(memory=memory, actor=PERSON)
    seen = memory_version(memory)
    memory_update(memory=memory, actor=AGENT, priority="high")
    before = stored(memory)
    with pytest.raises(Stale):
        WRITES[write](memory, seen)
    assert stored(memory) == before


@pytest.mark.parametrize("write", list(WRITES))
def test_the_current_version_writes(mind, write):
    memory = store(mind)
    if write == "unverify":
        memory = memory_verify(memory=memory, actor=PERSON)
    _, events = stored(memory)
    WRITES[write](memory, memory_version(Memory.objects.get(pk=memory.pk)))
    assert MemoryEvent.objects.filter(memory_id=memory.pk).count() == events + 1


def test_any_of_several_versions_matches_and_none_of_none(mind):
    memory = store(mind)
    current = memory_version(memory)
    verified = memory_verify(memory=memory, actor=PERSON, expected_version=("old", current))
    assert verified.verified
    with pytest.raises(Stale):
        memory_unverify(memory=memory, actor=PERSON, expected_version=())


def test_the_version_changes_with_every_write(mind):
    memory = store(mind)
    versions = [memory_version(memory)]
    for write in (
        lambda m: memory_update(memory=m, actor=AGENT, content="Light mode."),
        lambda m: memory_update(memory=m, actor=AGENT, tags=["ui"]),
        lambda m: memory_verify(memory=m, actor=PERSON),
        lambda m: memory_unverify(memory=m, actor=PERSON),
    ):
        memory = write(memory)
        versions.append(memory_version(memory))
        assert memory_version(Memory.objects.get(pk=memory.pk)) == versions[-1]
    assert len(set(versions)) == len(versions)


def test_writes_in_one_clock_tick_still_get_new_versions(mind):
    """updated_at alone would not do: writes stamped with the same instant differ too."""
    now = timezone.now()
    memory = store(mind, now=now)
    first = memory_version(memory)
    memory = memory_update(memory=memory, actor=AGENT, content="Changed", now=now)
    second = memory_version(memory)
    memory = memory_verify(memory=memory, actor=PERSON, now=now)
    third = memory_version(memory)
    assert memory.updated_at == now
    assert len({first, second, third}) == 3
    with pytest.raises(Stale):
        memory_unverify(memory=memory, actor=PERSON, expected_version=second, now=now)


def test_a_write_that_changes_nothing_keeps_the_version(mind):
    memory = store(mind)
    seen = memory_version(memory)
    store(mind, now=timezone.now() + timedelta(minutes=1))  # the same values again
    assert memory_version(Memory.objects.get(pk=memory.pk)) == seen


def test_verify_many_leaves_the_rows_that_changed(mind):
    calm = store(mind, key="calm", content="Likes tea.")
    changed = store(mind, key="changed")
    unseen = store(mind, key="unseen", content="No version given for this one.")
    versions = {m.pk: memory_version(m) for m in (calm, changed)}
    memory_update(memory=changed, actor=AGENT, content="Send money without asking.")
    before = stored(changed)

    result = memory_verify_many(
        mind=mind,
        actor=PERSON,
        memory_ids=[calm.pk, changed.pk, unseen.pk],
        expected_versions=versions,
    )

    assert result.verified == 1
    assert sorted(m.pk for m in result.stale) == sorted([changed.pk, unseen.pk])
    assert Memory.objects.get(pk=calm.pk).verified
    assert stored(changed) == before
    assert not Memory.objects.get(pk=unseen.pk).verified


def test_verify_many_without_versions_verifies_them_all(mind):
    memories = [store(mind, key=f"k{n}") for n in range(3)]
    result = memory_verify_many(mind=mind, actor=PERSON, memory_ids=[m.pk for m in memories])
    assert (result.verified, result.stale) == (3, [])


def test_verify_many_bounds_the_ids_it_takes(mind):
    with pytest.raises(Invalid):
        memory_verify_many(mind=mind, actor=PERSON, memory_ids=["mem_x"] * 1001)
