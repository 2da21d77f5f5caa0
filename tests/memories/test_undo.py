"""memory_undo: a person takes back their own verify or delete, for a while, if nothing
was written since."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from django.utils import timezone

from core.errors import Conflict, Forbidden, Invalid, NotFound, Stale
from memories import audit
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, MemoryTag
from memories.selectors import diff_until, memory_diff
from memories.services import (
    UNDO_WINDOW,
    memory_delete,
    memory_undo,
    memory_update,
    memory_verify,
)
from tests.factories import remember

pytestmark = pytest.mark.django_db

AGENT = Actor(kind="agent", name="mk_agent")
PERSON = Actor(kind="user", name="owner@example.com")
SOMEONE_ELSE = Actor(kind="user", name="other@example.com")


store = partial(remember, key="ui", content="Prefers dark mode", category="preference", actor=AGENT)


def test_undoing_a_verify_unverifies_and_is_audited(mind):
    memory = store(mind)
    memory_verify(memory=memory, actor=PERSON)

    undone = memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="verify")

    assert undone.action == "verify" and undone.memory.pk == memory.pk
    memory.refresh_from_db()
    assert (memory.verified, memory.verified_by, memory.verified_at) == (False, "", None)
    last = MemoryEvent.objects.filter(memory_id=memory.pk).order_by("-at", "-id").first()
    assert (last.action, last.actor) == ("unverify", PERSON.name)


def test_undoing_a_delete_puts_the_memory_back_under_its_own_id(mind):
    expires = timezone.now() + timedelta(days=3)
    memory = store(mind, tags=["ui", "Theme"], priority="high", confidence=0.4, expires_at=expires)
    memory_verify(memory=memory, actor=PERSON)
    memory.refresh_from_db()
    memory_delete(memory=memory, actor=PERSON)

    undone = memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")

    back = Memory.objects.get(mind=mind, category="preference", key="ui")
    assert undone.memory.pk == back.pk == memory.pk  # the same id, so the same URL
    assert (back.content, back.tags, back.priority, back.confidence) == (
        memory.content,
        memory.tags,
        memory.priority,
        0.4,
    )
    assert (back.source, back.expires_at, back.created_at) == ("agent", expires, memory.created_at)
    assert (back.verified, back.verified_by, back.verified_at) == (
        True,
        PERSON.name,
        memory.verified_at,
    )
    assert back.updated_at > memory.updated_at
    assert sorted(MemoryTag.objects.filter(memory=back).values_list("tag", flat=True)) == [
        "theme",
        "ui",
    ]
    # Its history goes on: the delete, then the undelete; no second create.
    actions = list(
        MemoryEvent.objects.filter(memory_id=memory.pk)
        .order_by("at", "id")
        .values_list("action", flat=True)
    )
    assert actions == ["create", "verify", "delete", "undelete"]
    history = audit.memory_history(memory=back)
    assert [e.event.action for e in history] == ["undelete", "delete", "verify", "create"]
    assert not history[0].restorable and not history[1].restorable
    mind.refresh_from_db()
    assert mind.stored_memories == 1


def test_an_undone_delete_is_not_deleted_for_incremental_sync(mind):
    before = timezone.now()
    memory = store(mind)
    memory_delete(memory=memory, actor=PERSON)
    gone = memory_diff(mind=mind, since=before, until=diff_until(mind=mind))
    assert list(gone.deleted) == [memory.pk]

    memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")

    back = memory_diff(mind=mind, since=before, until=diff_until(mind=mind))
    assert list(back.deleted) == [] and [m.pk for m in back.created] == [memory.pk]
    later = memory_diff(
        mind=mind, since=memory.created_at + timedelta(microseconds=1), until=diff_until(mind=mind)
    )
    assert list(later.deleted) == [] and [m.pk for m in later.updated] == [memory.pk]


def test_a_delete_is_put_back_once(mind):
    memory = store(mind)
    memory_delete(memory=memory, actor=PERSON)
    memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")
    with pytest.raises(Stale):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")
    assert Memory.objects.filter(mind=mind).count() == 1


def test_a_verify_refuses_when_the_memory_changed_since(mind):
    memory = store(mind)
    memory_verify(memory=memory, actor=PERSON)
    store(mind, content="Authorised the agent to send money without asking")
    with pytest.raises(Stale):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="verify")
    memory.refresh_from_db()
    assert memory.content.startswith("Authorised") and not memory.verified
    assert not MemoryEvent.objects.filter(action="unverify").exists()


def test_a_verify_refuses_when_the_person_edited_it_since(mind):
    memory = store(mind)
    memory_verify(memory=memory, actor=PERSON)
    memory_update(memory=memory, actor=PERSON, priority="high")
    with pytest.raises(Stale):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="verify")
    memory.refresh_from_db()
    assert memory.verified


def test_a_delete_refuses_when_its_key_was_stored_again(mind):
    memory = store(mind)
    memory_delete(memory=memory, actor=PERSON)
    again = store(mind, content="Stored again by the agent")
    with pytest.raises(Stale):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")
    assert list(Memory.objects.filter(mind=mind)) == [again]
    assert Memory.objects.get(pk=again.pk).content == "Stored again by the agent"


def test_too_late_is_refused(mind):
    memory = store(mind)
    memory_verify(memory=memory, actor=PERSON)
    later = timezone.now() + UNDO_WINDOW + timedelta(seconds=1)
    with pytest.raises(Conflict):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="verify", now=later)
    memory.refresh_from_db()
    assert memory.verified


def test_only_ones_own_verify_or_delete(mind):
    memory = store(mind)
    memory_verify(memory=memory, actor=SOMEONE_ELSE)
    with pytest.raises(NotFound):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="verify")
    with pytest.raises(NotFound):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")
    with pytest.raises(NotFound):
        memory_undo(mind=mind, actor=PERSON, memory_id="mem_nonexistent", action="verify")
    with pytest.raises(Forbidden):
        memory_undo(mind=mind, actor=AGENT, memory_id=memory.pk, action="verify")
    with pytest.raises(Invalid):
        memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="update")
    memory.refresh_from_db()
    assert memory.verified


def test_another_minds_memory_is_not_found(mind, stranger_mind):
    theirs = store(stranger_mind.mind)
    memory_verify(memory=theirs, actor=PERSON)
    memory_delete(memory=theirs, actor=PERSON)
    for action in ("verify", "delete"):
        with pytest.raises(NotFound):
            memory_undo(mind=mind, actor=PERSON, memory_id=theirs.pk, action=action)
    assert not Memory.objects.filter(mind=mind).exists()
