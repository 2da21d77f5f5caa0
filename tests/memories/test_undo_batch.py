"""Bulk verify, unverify, delete and re-tag by a person, and memory_undo_batch, which takes
one of them back as a whole: what changed since is left, and said."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from core.errors import Conflict, Forbidden, Invalid, NotFound, Stale
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryTag
from memories.services import (
    UNDO_WINDOW,
    Batch,
    memory_delete_many,
    memory_retag_many,
    memory_undo_batch,
    memory_unverify_many,
    memory_update,
    memory_verify_many,
    memory_verify_matching,
)
from memories.versions import memory_version
from tests.factories import remember

pytestmark = pytest.mark.django_db

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="owner@example.com")
SOMEONE_ELSE = Actor(kind="user", name="other@example.com")

store = partial(remember, category="fact", actor=AGENT)


def three(mind, **fields):
    return [store(mind, key=f"k{i}", content=f"Fact number {i}", **fields) for i in range(3)]


def ids(memories):
    return sorted(m.pk for m in memories)


def test_a_bulk_verify_is_undone_as_a_whole(mind):
    memories = three(mind)
    done = memory_verify_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    assert done.verified == 3 and done.batch is not None and done.batch.action == "verify"

    undone = memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    assert (undone.action, ids(undone.undone), undone.left) == ("verify", ids(memories), 0)
    assert not Memory.objects.filter(mind=mind, verified=True).exists()
    assert MemoryEvent.objects.filter(action="unverify", actor=PERSON.name).count() == 3


def test_verify_all_matching_is_undone_too(mind):
    memories = three(mind)
    done = memory_verify_matching(mind=mind, actor=PERSON, seen_at=timezone.now())
    assert done.verified == 3 and done.batch is not None

    undone = memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    assert ids(undone.undone) == ids(memories)
    assert not Memory.objects.filter(mind=mind, verified=True).exists()


def test_a_bulk_unverify_is_undone_with_who_verified_and_when(mind):
    memories = three(mind)
    verified = memory_verify_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    stamp = Memory.objects.get(pk=memories[0].pk).verified_at
    done = memory_unverify_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    assert done.changed == 3 and done.batch is not None and done.batch.at > verified.batch.at

    memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    back = Memory.objects.get(pk=memories[0].pk)
    assert (back.verified, back.verified_by, back.verified_at) == (True, PERSON.name, stamp)


def test_a_bulk_delete_is_undone_under_the_same_ids(mind):
    memories = three(mind, tags=["office"])
    done = memory_delete_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    assert done.changed == 3 and not Memory.objects.filter(mind=mind).exists()
    mind.refresh_from_db()
    assert mind.stored_memories == 0

    undone = memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    assert ids(undone.undone) == ids(memories) == ids(Memory.objects.filter(mind=mind))
    assert MemoryTag.objects.filter(mind=mind, tag="office").count() == 3
    assert MemoryEvent.objects.filter(mind=mind, action="undelete").count() == 3
    assert not MemoryEvent.objects.filter(mind=mind, action="create", actor=PERSON.name).exists()
    mind.refresh_from_db()
    assert mind.stored_memories == 3


def test_a_bulk_retag_is_undone_and_leaves_verification_alone(mind):
    memories = three(mind, tags=["office", "munich"])
    done = memory_retag_many(
        mind=mind, actor=PERSON, memory_ids=ids(memories), add=["Berlin"], remove=["munich"]
    )
    assert done.changed == 3 and done.batch.action == "update"
    first = Memory.objects.get(pk=memories[0].pk)
    assert (first.tags, first.verified) == (["office", "berlin"], False)
    assert sorted(MemoryTag.objects.filter(memory=first).values_list("tag", flat=True)) == [
        "berlin",
        "office",
    ]

    memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    first.refresh_from_db()
    assert (first.tags, first.verified) == (["office", "munich"], False)


def test_retag_refuses_bad_tags_and_writes_nothing(mind):
    memories = three(mind)
    with pytest.raises(Invalid):
        memory_retag_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    with pytest.raises(Invalid):
        memory_retag_many(mind=mind, actor=PERSON, memory_ids=ids(memories), add=["x" * 65])
    crowded = store(mind, key="crowded", content="Many tags", tags=[f"t{i}" for i in range(20)])
    with pytest.raises(Invalid, match="crowded"):
        memory_retag_many(
            mind=mind, actor=PERSON, memory_ids=[crowded.pk, *ids(memories)], add=["one"]
        )
    assert not MemoryEvent.objects.filter(action="update").exists()


def test_what_changed_since_is_left_and_counted(mind):
    memories = three(mind)
    done = memory_verify_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    memory_update(memory=memories[1], actor=AGENT, content="Rewritten by the agent")

    undone = memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    assert (len(undone.undone), undone.left, undone.total) == (2, 1, 3)
    rewritten = Memory.objects.get(pk=memories[1].pk)
    assert rewritten.content == "Rewritten by the agent" and not rewritten.verified
    with pytest.raises(Stale):  # undone already: every one changed since
        memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)


def test_a_delete_whose_key_was_stored_since_is_left(mind):
    memories = three(mind)
    done = memory_delete_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    again = store(mind, key="k0", content="Stored again by the agent")

    undone = memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch)

    assert (ids(undone.undone), undone.left) == (ids(memories[1:]), 1)
    assert Memory.objects.get(mind=mind, key="k0") == again
    assert Memory.objects.get(mind=mind, key="k0").content == "Stored again by the agent"


def test_stale_rows_are_left_by_the_bulk_action_itself(mind):
    memories = three(mind)
    read = {m.pk: memory_version(m) for m in memories}
    memory_update(memory=memories[0], actor=AGENT, content="Changed after the page was read")

    done = memory_delete_many(
        mind=mind, actor=PERSON, memory_ids=ids(memories), expected_versions=read
    )

    assert done.changed == 2 and ids(done.stale) == [memories[0].pk]
    assert Memory.objects.filter(mind=mind).count() == 1


def test_too_late_is_refused(mind):
    memories = three(mind)
    done = memory_delete_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    later = timezone.now() + UNDO_WINDOW + timedelta(seconds=1)
    with pytest.raises(Conflict):
        memory_undo_batch(mind=mind, actor=PERSON, batch=done.batch, now=later)
    assert not Memory.objects.filter(mind=mind).exists()


def test_another_minds_batch_and_ids_are_not_touched(mind, stranger_mind):
    theirs = three(stranger_mind.mind)
    mine = three(mind)
    # Ids of another mind match nothing in a bulk action on this one.
    done = memory_verify_many(mind=mind, actor=PERSON, memory_ids=ids(theirs + mine))
    assert done.verified == 3
    assert not Memory.objects.filter(mind=stranger_mind.mind, verified=True).exists()
    # A batch written on another mind is not found from this one.
    elsewhere = memory_delete_many(mind=stranger_mind.mind, actor=PERSON, memory_ids=ids(theirs))
    with pytest.raises(NotFound):
        memory_undo_batch(mind=mind, actor=PERSON, batch=elsewhere.batch)
    assert not Memory.objects.filter(mind=stranger_mind.mind).exists()


def test_only_a_person_and_only_their_own_batch(mind):
    memories = three(mind)
    done = memory_verify_many(mind=mind, actor=PERSON, memory_ids=ids(memories))
    with pytest.raises(Forbidden):
        memory_undo_batch(mind=mind, actor=AGENT, batch=done.batch)
    with pytest.raises(NotFound):
        memory_undo_batch(mind=mind, actor=SOMEONE_ELSE, batch=done.batch)
    with pytest.raises(Invalid):
        memory_undo_batch(mind=mind, actor=PERSON, batch=Batch("create", done.batch.at))
    for bulk in (memory_unverify_many, memory_delete_many):
        with pytest.raises(Forbidden):
            bulk(mind=mind, actor=AGENT, memory_ids=ids(memories))
    with pytest.raises(Forbidden):
        memory_retag_many(mind=mind, actor=AGENT, memory_ids=ids(memories), add=["x"])
    assert Memory.objects.filter(mind=mind, verified=True).count() == 3
