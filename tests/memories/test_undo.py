"""memory_undo: a person takes back their own verify or delete, for a while, if nothing
was written since."""

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


def test_undoing_a_delete_puts_the_memory_back_as_it_was(mind):
    expires = timezone.now() + timedelta(days=3)
    memory = store(mind, tags=["ui", "Theme"], priority="high", confidence=0.4, expires_at=expires)
    memory_delete(memory=memory, actor=PERSON)

    undone = memory_undo(mind=mind, actor=PERSON, memory_id=memory.pk, action="delete")

    back = Memory.objects.get(mind=mind, category="preference", key="ui")
    assert undone.memory.pk == back.pk != memory.pk  # a new id, as any memory stored again
    assert (back.content, back.tags, back.priority, back.confidence) == (
        memory.content,
        memory.tags,
        memory.priority,
        0.4,
    )
    assert (back.source, back.verified, back.expires_at) == ("agent", False, expires)
    assert sorted(MemoryTag.objects.filter(memory=back).values_list("tag", flat=True)) == [
        "theme",
        "ui",
    ]
    created = MemoryEvent.objects.get(memory_id=back.pk)
    assert (created.action, created.actor) == ("create", PERSON.name)
    mind.refresh_from_db()
    assert mind.stored_memories == 1


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
