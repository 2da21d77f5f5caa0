"""The audit trail: what every write records, and reading it back.

Every write that changes a memory records one MemoryEvent: who (the actor), what (the
action), when, and `changes` ({field: {"old", "new"}} for what changed). A create records
every audited value as new; a delete records every old value, which is also the tombstone
`/memory/diff` reads. Values are kept in their JSON form (`fields.audit_values`).

The values a mind's trail holds are bounded by its history budget (SYNAPSE_MAX_HISTORY_BYTES):
each event records its `size`, the mind keeps their sum (`Mind.history_bytes`), and a write
that takes the mind past the budget folds the oldest events' values, in its own transaction,
until the mind is back within it. A folded event keeps who, what, when, which memory and
which fields; each field's values become FOLDED. Nothing is restored from a folded value.

A purge (a person's, or the redaction of a credential) makes a memory's values PURGED in
every event of it, whatever the budget: the entries stay, saying who did what and when.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

import orjson
from django.db import connection
from django.db.models import Q, QuerySet

from core.errors import NotFound
from memories.actors import Actor
from memories.fields import AUDITED_FIELDS, RESTORABLE_FIELDS, TOMBSTONE_FIELDS, audit_values
from memories.models import Memory, MemoryEvent
from memories.rules import can_be_stored, quotas
from minds.models import Mind

Action = MemoryEvent.Action
Changes = dict[str, dict[str, Any]]

# What a folded field of an event holds instead of its old and new values.
FOLDED: dict[str, Any] = {"folded": True}
# What a purged field holds instead: a person asked for its values to be forgotten.
PURGED: dict[str, Any] = {"purged": True}


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


def changes_size(changes: Changes) -> int:
    """What an event's values hold of its mind's history budget: the UTF-8 bytes of its
    `changes` as compact JSON."""
    try:
        return len(orjson.dumps(changes))
    except TypeError:  # text orjson refuses (a lone surrogate): measured the slow way
        text = json.dumps(changes, ensure_ascii=False, separators=(",", ":"))
        return len(text.encode("utf-8", "surrogatepass"))


def is_folded(change: Any) -> bool:
    """Whether one field's entry of `changes` is FOLDED (its values are no longer held)."""
    return isinstance(change, dict) and change.get("folded") is True and "old" not in change


def is_purged(change: Any) -> bool:
    """Whether one field's entry of `changes` is PURGED."""
    return isinstance(change, dict) and change.get("purged") is True and "old" not in change


def holds_no_values(change: Any) -> bool:
    """Whether one field's entry no longer holds its values (folded or purged)."""
    return is_folded(change) or is_purged(change)


def purged_changes(fields: Iterable[str]) -> Changes:
    """The changes of a purge event: which fields it purged, none of their values."""
    return {name: dict(PURGED) for name in fields}


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
        "size": changes_size(changes),
    }


# --- The history budget -------------------------------------------------------------------

# Events read at a time while looking for the oldest ones to fold.
FOLD_CHUNK = 200


def history_fold(mind_id: str, *, held: int) -> int:
    """Fold the values of the mind's oldest events until what it holds (`held`, its
    history_bytes after this write's events) is back within its budget: two statements,
    whatever their number. Run by the write, under the mind's write lock, after its events
    are written (so a write larger than the whole budget folds its own too). Returns the
    bytes folded."""
    budget = quotas()["history"]
    if not budget or held <= budget:
        return 0
    excess = held - budget
    unfolded = MemoryEvent.objects.filter(mind_id=mind_id, size__gt=0).order_by("at", "id")
    freed, last = 0, None
    while freed < excess:
        page = unfolded
        if last is not None:
            page = page.filter(Q(at__gt=last[0]) | Q(at=last[0], id__gt=last[1]))
        rows = list(page.values_list("at", "id", "size")[:FOLD_CHUNK])
        for at, pk, size in rows:
            freed, last = freed + size, (at, pk)
            if freed >= excess:
                break
        if len(rows) < FOLD_CHUNK:
            break
    if last is None:
        return 0
    _fold_through(mind_id, at=last[0], pk=last[1], freed=freed)
    return freed


def _fold_through(mind_id: str, *, at: datetime, pk: int, freed: int) -> None:
    """Fold every unfolded event of the mind up to (at, pk) in the trail's order, and take
    their `freed` bytes off its counter."""
    quote = connection.ops.quote_name
    events = quote(MemoryEvent._meta.db_table)
    folded = json.dumps(FOLDED)
    if connection.vendor == "postgresql":
        marker = (
            f"(SELECT COALESCE(jsonb_object_agg(j.key, %s::jsonb), '{{}}'::jsonb) "
            f"FROM jsonb_each({events}.changes) j)"
        )
    else:
        marker = f"(SELECT json_group_object(j.key, json(%s)) FROM json_each({events}.changes) j)"
    with connection.cursor() as cursor:
        # The same rows history_fold read: the unfolded ones, oldest first, up to (at, pk).
        cursor.execute(
            f"UPDATE {events} SET changes = {marker}, size = 0 "
            "WHERE mind_id = %s AND size > 0 AND (at < %s OR (at = %s AND id <= %s))",
            [folded, mind_id, *_at_params(at), pk],
        )
        cursor.execute(
            f"UPDATE {quote(Mind._meta.db_table)} SET history_bytes = history_bytes - %s "
            "WHERE id = %s",
            [freed, mind_id],
        )


def values_purge(
    mind_id: str, memory_id: str, *, fields: Iterable[str] | None = None, key: str | None = None
) -> int:
    """Make the values of every event of this memory PURGED (only `fields` when given; the
    events' key becomes `key` when given, since a derived key repeats the content's first
    words), and take the bytes they held off the mind's counter. Run under the mind's write
    lock. Returns the bytes freed."""
    quote = connection.ops.quote_name
    events = quote(MemoryEvent._meta.db_table)
    purged = json.dumps(PURGED)
    if connection.vendor == "postgresql":
        value = "%s::jsonb"
        keep = "j.value"
        object_of = (
            "(SELECT COALESCE(jsonb_object_agg(j.key, {value}), '{{}}'::jsonb) "
            f"FROM jsonb_each({events}.changes) j)"
        )
    else:
        value, keep = "json(%s)", "json(j.value)"
        object_of = (
            f"(SELECT json_group_object(j.key, {{value}}) FROM json_each({events}.changes) j)"
        )
    params: list[Any] = []
    if fields is None:
        marker = object_of.format(value=value)
        params.append(purged)
    else:
        names = list(fields)
        marks = ", ".join(["%s"] * len(names))
        marker = object_of.format(
            value=f"CASE WHEN j.key IN ({marks}) THEN {value} ELSE {keep} END"
        )
        params += [*names, purged]
    mine = "WHERE mind_id = %s AND memory_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(SUM(size), 0) FROM {events} {mine}", [mind_id, memory_id])
        held = int(cursor.fetchone()[0])
        renamed = ", key = %s" if key is not None else ""
        cursor.execute(
            f"UPDATE {events} SET changes = {marker}, size = 0{renamed} {mine}",
            [*params, *([key] if key is not None else []), mind_id, memory_id],
        )
        if fields is not None:
            # What is left of a partly purged event still counts against the budget.
            cursor.execute(f"SELECT id, changes FROM {events} {mine}", [mind_id, memory_id])
            sizes = [(changes_size(_as_dict(c)), pk) for pk, c in cursor.fetchall()]
            cursor.executemany(f"UPDATE {events} SET size = %s WHERE id = %s", sizes)
            held -= sum(size for size, _ in sizes)
        cursor.execute(
            f"UPDATE {quote(Mind._meta.db_table)} SET history_bytes = history_bytes - %s "
            "WHERE id = %s",
            [held, mind_id],
        )
    return held


def _as_dict(changes: Any) -> Changes:
    parsed: Changes = json.loads(changes) if isinstance(changes, str | bytes) else changes
    return parsed


def _at_params(at: datetime) -> list[Any]:
    """`at` twice, as the database compares it with the column."""
    value = MemoryEvent._meta.get_field("at").get_db_prep_value(at, connection)
    return [value, value]


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


class FoldedValue:
    """A value the history no longer holds (its event was folded): shown as such, never
    restored, never equal to a value."""

    def __str__(self) -> str:
        return "(folded)"

    def __repr__(self) -> str:
        return "FOLDED_VALUE"


FOLDED_VALUE = FoldedValue()


class PurgedValue(FoldedValue):
    """A value a person purged: shown as such, never restored."""

    def __str__(self) -> str:
        return "(purged)"

    def __repr__(self) -> str:
        return "PURGED_VALUE"


PURGED_VALUE = PurgedValue()


@dataclass
class HistoryEntry:
    """One audit row, with the memory's restorable fields as they were right after it."""

    event: MemoryEvent
    version: dict[str, Any]
    # Fields that would change if this version were restored (empty: nothing to restore).
    # A field whose value there was folded holds FOLDED_VALUE.
    restorable: dict[str, Any]
    # Its place in the memory's history, the first write being 1: two versions written in
    # the same second still have different numbers.
    number: int = 0

    @property
    def changes(self) -> list[tuple[str, Any, Any]]:
        """(field, old, new) of each field the row changed; FOLDED_VALUE for folded values."""
        return [
            (name, _gone(ch), _gone(ch))
            if holds_no_values(ch)
            else (name, ch.get("old"), ch.get("new"))
            for name, ch in self.event.changes.items()
        ]

    @property
    def folded(self) -> list[str]:
        """The fields a restore of this version would need but the history no longer holds
        (empty: it can be restored exactly)."""
        return [name for name, value in self.restorable.items() if value is FOLDED_VALUE]

    @property
    def purged(self) -> list[str]:
        """The fields a restore of this version would need but a person purged."""
        return [name for name, value in self.restorable.items() if value is PURGED_VALUE]


def _gone(change: Any) -> FoldedValue:
    return PURGED_VALUE if is_purged(change) else FOLDED_VALUE


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
        if event.action == Action.DELETE:  # no version of its own: the undelete put it back
            restorable = {}
        yield HistoryEntry(
            event=event, version=version, restorable=restorable, number=total - index
        )
        if event.action == Action.UNDELETE:  # before it, the memory as its delete left it
            continue
        for name, change in event.changes.items():
            if name in state and isinstance(change, dict):
                state[name] = _gone(change) if holds_no_values(change) else change.get("old")


def memory_history_entry(*, memory: Memory, event_id: int) -> HistoryEntry:
    """The history entry of one audit row of this memory (shown or older); NotFound for any
    other."""
    for entry in _history(memory):
        if entry.event.pk == event_id:
            return entry
    raise NotFound("No such version of this memory.")
