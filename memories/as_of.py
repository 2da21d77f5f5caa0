"""A mind as of a moment: the memories it held then, each with its values then, rebuilt from
the audit trail (API.md §9.10).

The rebuild walks back from today: it starts from the mind's rows as they are now, and
undoes the mind's audit rows written after the moment, newest first. An update, verify,
unverify or supersede gives each field it changed its old value back; a delete brings the
memory back with the values its tombstone kept; a create or an undelete takes it away; a
purge leaves it out (its values are gone). `updated_at`, which the trail does not keep as
a value, is the time of the memory's latest write at or before the moment: every write that
records an audit row stamps the memory with the row's time. A memory no row since touched
is as it is now: only the touched ones are rebuilt, and a recall reads the others as
today's recall does, merged with them in recall order (RecallAsOf). What the rebuild
reads: the touched memories now, the audit rows since the moment, and the latest write
time of each memory those rows changed. Design notes:
docs/internals.md#a-mind-as-of-a-moment.

Exact, or refused: when a value the walk needs was folded (the history budget), the answer
is a Conflict naming the earliest moment that can be answered exactly. Purged values are
never recovered: a memory purged since is left out, and a field purged since (a redacted
credential) is shown as purged.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import json
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from django.db.models import Max, QuerySet

from core.errors import Conflict, Invalid, NotFound
from memories import audit
from memories.fields import FIELDS_BY_NAME, TOMBSTONE_FIELDS, PublicField, iso
from memories.filters import DEFAULT_SORT, NO_FILTERS, Expired, MemoryFilters, sorted_memories
from memories.models import Memory, MemoryEvent, MemoryQuerySet
from memories.recall import (
    MAX_KEYS_NAMED,
    RecallSelection,
    Row,
    driver_rows,
    recall_rows,
    recall_selection,
)
from memories.rows import SAME_VALUES_CHUNK
from memories.rules import can_be_stored
from memories.search import SearchPage, SearchQueryError, parse_query
from memories.search.rebuilt import keyword_search_memories
from memories.selectors import MemoryPage, person_reaches
from minds.access import Level
from minds.models import Mind

Action = MemoryEvent.Action
NOT_FOUND = "No memory with this id in this mind at that moment."
# What a field purged since shows: its value then is gone.
PURGED_CONTENT = str(audit.PURGED_VALUE)
# The writes that stamp a memory's updated_at with their time (a delete and a purge do not:
# the memory is gone).
STAMPING = (
    Action.CREATE,
    Action.UPDATE,
    Action.VERIFY,
    Action.UNVERIFY,
    Action.SUPERSEDE,
    Action.UNDELETE,
)
# The fields a tombstone keeps, by the name the trail gives them: the values rebuilt.
_KEPT = {name: FIELDS_BY_NAME[name] for name in TOMBSTONE_FIELDS}
_ATTRIBUTES = tuple(kept.attribute for kept in _KEPT.values())
# Audit rows read at a time on the walk back.
WALK_CHUNK = 500


class _Purged:
    """A memory the mind held that a person purged since."""


_PURGED = _Purged()
State = dict[str, Any] | _Purged


@dataclass
class MindAsOf:
    """What a mind held at `at`: its memories as they were (unsaved instances, expired and
    superseded ones included), and how many more it held that were purged since."""

    mind: Mind
    at: datetime
    memories: list[Memory] = field(default_factory=list)
    purged: int = 0
    # The memories the audit rows since touched: the rebuilt ones (and the ones created or
    # purged since).
    touched: frozenset[str] = frozenset()

    def chosen(self, filters: MemoryFilters = NO_FILTERS, sort: str | None = None) -> list[Memory]:
        """The memories `filters` keep, expiry judged at `at`, in the order SORTS[sort]
        names."""
        if filters.impossible:
            return []
        kept = (m for m in self.memories if filters.matches(m, now=self.at))
        return sorted_memories(kept, sort or DEFAULT_SORT)


def mind_as_of(*, mind: Mind, at: datetime) -> MindAsOf:
    """Every memory `mind` held at `at`, as it was then. Conflict when the history the
    rebuild needs was folded (the message names the earliest moment answered exactly)."""
    return _rebuilt(mind, at, memory_id=None)


def memory_as_of(*, mind: Mind, memory_id: str, at: datetime) -> Memory:
    """The memory `memory_id` of `mind` as it was at `at`: NotFound when the mind did not
    hold it then (or a person purged it since), Conflict as mind_as_of."""
    held = _rebuilt(mind, at, memory_id=memory_id) if can_be_stored(memory_id) else None
    if held is None or not held.memories:
        raise NotFound(NOT_FOUND)
    return held.memories[0]


def memory_mind_for_person(*, user: Any, memory_id: str, need: Level) -> Mind:
    """The mind of `memory_id` for a person who names none: the memory's mind now, or, for a
    memory deleted since, the mind its audit rows belong to; when they reach it at `need`.
    NotFound when they cannot see it (missing and foreign alike), LevelTooLow below `need`."""
    mind = None
    if can_be_stored(memory_id):
        row = Memory.objects.filter(pk=memory_id).values_list("mind_id").first()
        if row is None:
            row = MemoryEvent.objects.filter(memory_id=memory_id).values_list("mind_id").first()
        mind = Mind.objects.filter(pk=row[0]).first() if row is not None else None
    if mind is None:
        raise NotFound(NOT_FOUND)
    person_reaches(user=user, mind=mind, need=need, missing=NOT_FOUND)
    return mind


def memory_list_as_of(
    *,
    mind: Mind,
    at: datetime,
    filters: MemoryFilters = NO_FILTERS,
    sort: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> MemoryPage:
    """selectors.memory_list of the mind as it was at `at`: the filters and the order applied
    to the rebuilt memories (all of them are read, then one page is kept)."""
    chosen = mind_as_of(mind=mind, at=at).chosen(filters, sort)
    return MemoryPage(chosen[offset : offset + limit], len(chosen))


def memory_search_as_of(
    *,
    mind: Mind,
    at: datetime,
    q: str,
    filters: MemoryFilters = NO_FILTERS,
    limit: int = 20,
    offset: int = 0,
) -> SearchPage:
    """A keyword search of the mind as it was at `at` (search.rebuilt: the SQLite backend's
    rules). Invalid naming `q` when it holds nothing searchable, as memory_search."""
    try:
        parsed = parse_query(q)
    except SearchQueryError as exc:
        raise Invalid.one("q", str(exc)) from None
    chosen = mind_as_of(mind=mind, at=at).chosen(filters)
    return keyword_search_memories(chosen, q=q, parsed=parsed, limit=limit, offset=offset)


@dataclass(frozen=True)
class RecallAsOf(RecallSelection):
    """A recall of the mind as it was at `now`. The memories no audit row since touched are
    as they are now: read as today's recall reads them (held then when created by then,
    expiry judged then), the `touched` ones skipped as they come, and merged in recall
    order with `rebuilt`, the touched ones as they were, which the selection keeps.
    Rendered by memories.recall like any selection."""

    rebuilt: tuple[Memory, ...] = ()
    touched: frozenset[str] = frozenset()

    def _narrowed(self, expired: Expired) -> MemoryQuerySet:
        if self.now < self.mind.created_at:
            return Memory.objects.none()  # before the mind existed: an empty mind
        return super()._narrowed(expired).filter(created_at__lte=self.now)

    def rows(self, *, for_json: bool, whole: bool) -> Iterable[Row]:
        today = recall_rows(self, for_json=for_json, whole=whole, memories=self.memories())
        untouched = (row for row in today if row.id not in self.touched)
        return heapq.merge(untouched, self.rebuilt, key=_recall_key, reverse=True)

    def first_keys(self, priority: int) -> tuple[str, ...]:
        names = ("priority", "updated_at", "id", "key")
        first = self.memories().filter(priority=priority).exclude(pk__in=self._touched_now())
        rows = first.values_list(*names, named=True)[:MAX_KEYS_NAMED]
        rebuilt = (memory for memory in self.rebuilt if memory.priority == priority)
        merged = heapq.merge(rows, rebuilt, key=_recall_key, reverse=True)
        return tuple(row.key for row in itertools.islice(merged, MAX_KEYS_NAMED))

    def counts(self) -> dict[tuple[bool, int], int]:
        counts = super().counts()
        touched = self.counts_of(self.filtered().filter(pk__in=self._touched_now()))
        for memory in self.rebuilt:
            counts[(memory.verified, memory.priority)] += 1
        return {group: n - touched[group] for group, n in counts.items()}

    def _touched_now(self) -> QuerySet[MemoryEvent, Any]:
        return _touched_ids(self.mind, self.now)


def _recall_key(row: Row) -> tuple[int, datetime, str]:
    """Recall order, reversed (priority, updated_at and id all descend): rows and rebuilt
    memories alike."""
    return (row.priority, row.updated_at, row.id)


def recall_as_of(
    *,
    mind: Mind,
    at: datetime,
    category: str | None = None,
    tag: str | None = None,
    include_expired: bool = False,
    include_superseded: bool = False,
) -> RecallAsOf:
    """recall_selection of the mind as it was at `at` (expiry judged then); the recall
    renderers take it as they take any selection. Only the memories touched since are
    rebuilt here; the rest are read as the answer is rendered. Recall `about` a topic needs
    the search index, which holds only today's memories: not offered as of a moment."""
    selection = recall_selection(
        mind=mind,
        category=category,
        tag=tag,
        include_expired=include_expired,
        now=at,
        include_superseded=include_superseded,
    )
    touched = _rebuilt(mind, at, memory_id=None, untouched=False)
    rebuilt = touched.chosen(selection.search_filters(), "-priority")
    for memory in rebuilt:  # what the recall's text reads of a row besides the memory's fields
        memory.tags_text = json.dumps(memory.tags)  # type: ignore[attr-defined]
        memory.expired = memory.is_expired(at)  # type: ignore[attr-defined]
    fields = {f.name: getattr(selection, f.name) for f in dataclasses.fields(selection)}
    return RecallAsOf(**fields, rebuilt=tuple(rebuilt), touched=touched.touched)


# --- The walk back ----------------------------------------------------------------------------


def _rebuilt(
    mind: Mind, at: datetime, *, memory_id: str | None, untouched: bool = True
) -> MindAsOf:
    """The memories the mind held at `at` (or only `memory_id`): the ones audit rows since
    touched, rebuilt; with `untouched`, also the others, as they are now."""
    held = MindAsOf(mind=mind, at=at)
    if at < mind.created_at:
        return held  # before the mind existed: an empty mind
    now = Memory.objects.filter(mind=mind)
    events = MemoryEvent.objects.filter(mind=mind, at__gt=at)
    if memory_id is not None:
        now, events = now.filter(pk=memory_id), events.filter(memory_id=memory_id)
    touched = _touched_ids(mind, at)
    if untouched:
        # A memory no row since touched is as it is now: only the touched ones are rebuilt.
        for memory in now.filter(created_at__lte=at).exclude(pk__in=touched).iterator():
            memory.mind = mind
            held.memories.append(memory)
    # Read as values, not instances; one created since is taken away by its create row.
    # By id alone: the rows name this mind's memories, and the primary key finds them.
    touched_now = Memory.objects.filter(pk__in=touched, created_at__lte=at)
    if memory_id is not None:
        touched_now = touched_now.filter(pk=memory_id)
    rows_now = touched_now.values_list("id", *_ATTRIBUTES)
    today = {row[0]: dict(zip(_ATTRIBUTES, row[1:], strict=True)) for row in rows_now}
    states: dict[str, State | None] = {}
    walk = _events_back(events)
    try:
        restamped = _walk_back(states, today, walk)
    finally:
        walk.close()  # a refusal stops the walk half way: its cursor closes now
    held.touched = frozenset(states)
    stamps = _latest_writes(mind, at, [pk for pk in restamped if pk in states])
    for pk, state in states.items():
        if state is None:
            continue  # created since
        if isinstance(state, _Purged):
            held.purged += 1
            continue
        if pk in restamped:
            # No write at or before the moment left a row: it was as it was born.
            state["updated_at"] = stamps.get(pk, state["created_at"])
        memory = _memory(pk, mind, state)
        if memory.created_at <= at:  # (a row no create was recorded for: kept from its birth)
            held.memories.append(memory)
    return held


@dataclass(frozen=True)
class _Event:
    """An audit row as the walk reads it."""

    id: int
    memory_id: str
    action: str
    changes: dict[str, Any]

    @property
    def at(self) -> datetime:
        """When it was written (read again: only a refusal names it)."""
        return MemoryEvent.objects.values_list("at", flat=True).get(pk=self.id)


def _events_back(events: QuerySet[MemoryEvent, Any]) -> Generator[_Event, None, None]:
    """`events` newest first, their `changes` decoded from the column's JSON text by orjson
    (recall.driver_rows: Django's per-row conversion is most of a walk's reading)."""
    rows = events.order_by("-at", "-id").values_list("id", "memory_id", "action", "changes")
    for pk, memory_id, action, changes in driver_rows(rows, WALK_CHUNK):
        if isinstance(changes, str | bytes):
            changes = orjson.loads(changes)
        yield _Event(pk, memory_id, action, changes)


def _touched_ids(mind: Mind, at: datetime) -> QuerySet[MemoryEvent, Any]:
    """The ids of the memories of `mind` that audit rows written after `at` touched (a
    subquery)."""
    return MemoryEvent.objects.filter(mind=mind, at__gt=at).values("memory_id")


def _walk_back(
    states: dict[str, State | None], today: dict[str, dict[str, Any]], events: Iterator[_Event]
) -> set[str]:
    """Undo `events` (newest first) on `states` (model attributes to values), which take a
    memory's values from `today` at its first row (None: the mind did not hold it); the ids
    whose updated_at an undone write had stamped, so it must be read from the writes before
    them."""
    restamped: set[str] = set()
    for event in events:
        pk, action = event.memory_id, event.action
        if pk not in states:
            states[pk] = today.get(pk)
        if action == Action.PURGE:
            states[pk] = _PURGED
        elif action in (Action.CREATE, Action.UNDELETE):
            states[pk] = None  # before it, the mind did not hold the memory
        elif isinstance(states[pk], _Purged):
            continue  # its earlier rows hold nothing more
        elif action == Action.DELETE:
            states[pk] = _before_delete(event)
            restamped.discard(pk)  # the tombstone kept its updated_at
        elif isinstance(state := states[pk], dict):
            for name, change in event.changes.items():
                kept = _KEPT.get(name)
                if kept is not None and kept.attribute in state:
                    state[kept.attribute] = _old(event, change, kept)
            restamped.add(pk)
    return restamped


def _before_delete(event: _Event) -> State:
    """The memory as its delete found it: every value its tombstone kept."""
    if audit.is_purged(event.changes.get("key")):
        return _PURGED  # the whole memory was purged since (a redaction leaves the key)
    changes = ((_KEPT.get(name), change) for name, change in event.changes.items())
    return {kept.attribute: _old(event, change, kept) for kept, change in changes if kept}


def _old(event: _Event, change: Any, kept: PublicField) -> Any:
    """The value a row replaced, as the model holds it; PURGED_VALUE when purged since;
    Conflict when folded."""
    if audit.is_folded(change):
        raise Conflict(
            f"This mind's history up to {iso(event.at)} was folded to keep it within its "
            "budget (SYNAPSE_MAX_HISTORY_BYTES), so the mind before then cannot be rebuilt "
            f"exactly: give as_of={iso(event.at)} or later."
        )
    if audit.is_purged(change):
        return audit.PURGED_VALUE
    return kept.decode(change.get("old"))


def _latest_writes(mind: Mind, at: datetime, ids: list[str]) -> dict[str, datetime]:
    """The time of each memory's latest stamping write at or before `at`."""
    stamps: dict[str, datetime] = {}
    for start in range(0, len(ids), SAME_VALUES_CHUNK):
        chunk = ids[start : start + SAME_VALUES_CHUNK]
        rows = (
            MemoryEvent.objects.filter(
                mind=mind, memory_id__in=chunk, at__lte=at, action__in=STAMPING
            )
            .values("memory_id")
            .annotate(last=Max("at"))
            .values_list("memory_id", "last")
            .order_by()
        )
        stamps.update(rows)
    return stamps


def _memory(pk: str, mind: Mind, state: dict[str, Any]) -> Memory:
    """An unsaved memory with the values of `state`; a value purged since shows as purged
    (content) or as the field's default."""
    values = {name: value for name, value in state.items() if value is not audit.PURGED_VALUE}
    if state.get("content") is audit.PURGED_VALUE:
        values["content"] = PURGED_CONTENT
    memory = Memory(**values, id=pk, mind_id=mind.pk)
    memory.mind = mind
    return memory
