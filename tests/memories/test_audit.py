"""The audit trail read back: a memory's history is bounded however often it was rewritten."""

from __future__ import annotations

from memories.actors import Actor
from memories.audit import HISTORY_SHOWN, memory_history, memory_history_entry
from memories.models import MemoryEvent
from memories.services import memory_update, memory_upsert

AGENT = Actor(kind="agent", name="mk_agent")


def test_a_long_history_shows_its_newest_versions_and_finds_older_ones(mind):
    memory = memory_upsert(
        mind=mind, actor=AGENT, category="fact", key="k", content="version 0"
    ).memory
    for n in range(1, HISTORY_SHOWN + 5):
        memory = memory_update(memory=memory, actor=AGENT, content=f"version {n}")
    shown = memory_history(memory=memory)
    assert len(shown) == HISTORY_SHOWN
    assert shown[0].version["content"] == f"version {HISTORY_SHOWN + 4}"
    three = memory_history(memory=memory, limit=3)
    assert [e.event.pk for e in three] == [e.event.pk for e in shown[:3]]
    # The oldest row (the create), beyond what is shown, can still be restored.
    create = MemoryEvent.objects.get(memory_id=memory.pk, action="create")
    entry = memory_history_entry(memory=memory, event_id=create.pk)
    assert entry.version["content"] == "version 0"
    assert entry.restorable == {"content": "version 0"}
