"""The audit trail: what every write records, and reading it back.

Every write that changes a memory records one MemoryEvent: who (the actor), what (the
action), when, and `changes` ({field: {"old", "new"}} for what changed). A create records
every audited value as new; a delete records every old value, which is also the tombstone
`/memory/diff` reads. Values are kept in their JSON form (`fields.audit_values`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from django.db.models import QuerySet

from core.errors import NotFound
from memories.actors import Actor
from memories.fields import AUDITED_FIELDS, RESTORABLE_FIELDS, TOMBSTONE_FIELDS, audit_values
from memories.models import Memory, MemoryEvent
from memories.rules import can_be_stored
from minds.models import Mind

Action = MemoryEvent.Action
Changes = dict[str, dict[str, Any]]


def snapshot(memory: Memory) -> dict[str, Any]:
    """The memory's audited fields as the trail keeps them, to compare before and after."""
    return audit_values(memory)


def changes_between(before: dict[str, Any], after: dict[str, Any]) -> Changes:
    return {
        name: {"old": before[name], "new": after[name]}
        for name in AUDITED_FIELDS
        if before[name] != after[name]
    }


def created_changes(memory: Memory) -> Changes:
    return {name: {"old": None, "new": value} for name, value in snapshot(memory).items()}


def tombstone(memory: Memory) -> Changes:
    """Every value of a memory about to be deleted."""
    values = audit_values(memory, TOMBSTONE_FIELDS)
    return {name: {"old": value, "new": None} for name, value in values.items()}


def event_row(
    *, memory: Memory, actor: Actor, action: str, changes: Changes, now: datetime
) -> dict[str, Any]:
    """One audit row ({attname: value}), for the write that records it."""
    return {
        "mind_id": memory.mind_id,
        "memory_id": memory.pk,
        "category": memory.category,
        "key": memory.key,
        "action": action,
        "actor": actor.name[:254],
        "actor_type": actor.kind,
        "at": now,
        "changes": changes,
    }


# --- Reading it back ----------------------------------------------------------------------


def memory_events(
    *,
    mind: Mind,
    action: str | None = None,
    memory_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[MemoryEvent], int]:
    """The audit trail of the mind, newest first, optionally for one action or memory."""
    page, total = memory_event_page(
        mind=mind, action=action, memory_id=memory_id, limit=limit, offset=offset
    )
    return (list(page) if total else []), total


def memory_event_page(
    *,
    mind: Mind,
    action: str | None = None,
    memory_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[QuerySet[MemoryEvent], int]:
    """memory_events' page as a query, read when iterated (an answer streams it), and the
    total."""
    if not can_be_stored(memory_id):
        return MemoryEvent.objects.none(), 0
    events = MemoryEvent.objects.filter(mind=mind)
    if action is not None:
        events = events.filter(action=action)
    if memory_id is not None:
        events = events.filter(memory_id=memory_id)
    events = events.order_by("-at", "-id")
    return events[offset : offset + limit], events.count()


@dataclass
class HistoryEntry:
    """One audit row, with the memory's restorable fields as they were right after it."""

    event: MemoryEvent
    version: dict[str, Any]
    # Fields that would change if this version were restored (empty: nothing to restore).
    restorable: dict[str, Any]
    # Its place in the memory's history, the first write being 1: two versions written in
    # the same second still have different numbers.
    number: int = 0

    @property
    def changes(self) -> list[tuple[str, Any, Any]]:
        return [(name, ch.get("old"), ch.get("new")) for name, ch in self.event.changes.items()]


# The newest versions a history shows: each can hold a long text twice, and a memory
# rewritten every day gathers thousands.
HISTORY_SHOWN = 100


def memory_history(*, memory: Memory, limit: int = HISTORY_SHOWN) -> list[HistoryEntry]:
    """The memory's audit rows, newest first (the `limit` newest), each with the version it
    left behind.

    Walking back from the memory's present state, undoing each row's changes, gives the
    state right after every earlier row: that is what "restore this version" puts back.
    """
    return list(islice(_history(memory), limit))


def _history(memory: Memory) -> Iterator[HistoryEntry]:
    """Every history entry of the memory, newest first, its rows read a chunk at a time."""
    current = audit_values(memory, RESTORABLE_FIELDS)
    events = MemoryEvent.objects.filter(mind_id=memory.mind_id, memory_id=memory.pk)
    state = dict(current)
    total = events.count()
    ordered = events.order_by("-at", "-id").iterator(chunk_size=HISTORY_SHOWN)
    for index, event in enumerate(ordered):
        version = dict(state)
        restorable = {name: value for name, value in version.items() if value != current[name]}
        yield HistoryEntry(
            event=event, version=version, restorable=restorable, number=total - index
        )
        for name, change in event.changes.items():
            if name in state and isinstance(change, dict):
                state[name] = change.get("old")


def memory_history_entry(*, memory: Memory, event_id: int) -> HistoryEntry:
    """The history entry of one audit row of this memory (shown or older); NotFound for any
    other."""
    for entry in _history(memory):
        if entry.event.pk == event_id:
            return entry
    raise NotFound("No such version of this memory.")
