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
today's recall does, merged with them in recall order (RecallAsOf), which rebuilds of
each only what orders, counts and narrows it, the rest read when the recall reaches it.
What the rebuild reads: the touched memories now, the audit rows since the moment, and the
latest write time of each memory those rows changed. Design notes:
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
from collections import Counter, namedtuple
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from django.db.models import Max, QuerySet

from core.errors import Conflict, Invalid, NotFound
from memories import audit
from memories.fields import FIELDS_BY_NAME, TOMBSTONE_FIELDS, VALUE_NAMES, PublicField, iso
from memories.filters import DEFAULT_SORT, NO_FILTERS, Expired, MemoryFilters, sorted_memories
from memories.models import Memory, MemoryEvent, MemoryQuerySet, has_expired
from memories.recall import (
    MAX_KEYS_NAMED,
    STREAM_CHUNK,
    WHOLE_CHUNK,
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
    order with `rebuilt`, the touched ones the selection keeps, each with what orders,
    counts and narrows it; the rest of a rebuilt memory's values is read only when the
    recall reaches it (_Held.rows). Rendered by memories.recall like any selection."""

    rebuilt: tuple[_Held, ...] = ()
    touched: frozenset[str] = frozenset()
    # How many of the memories the selection reads today are touched ones, by (verified,
    # priority): what today's counts hold of them.
    touched_today: Counter[tuple[bool, int]] = dataclasses.field(default_factory=Counter)

    def _narrowed(self, expired: Expired) -> MemoryQuerySet:
        if self.now < self.mind.created_at:
            return Memory.objects.none()  # before the mind existed: an empty mind
        return super()._narrowed(expired).filter(created_at__lte=self.now)

    def rows(self, *, for_json: bool, whole: bool) -> Iterable[Row]:
        today = recall_rows(self, for_json=for_json, whole=whole, memories=self.memories())
        untouched = (row for row in today if row.id not in self.touched)
        chunk = WHOLE_CHUNK if whole else STREAM_CHUNK
        rebuilt = _Held.rows(self.rebuilt, at=self.now, chunk=chunk)
        return heapq.merge(untouched, rebuilt, key=_recall_key, reverse=True)

    def first_keys(self, priority: int) -> tuple[str, ...]:
        names = ("priority", "updated_at", "id", "key")
        first = self.memories().filter(priority=priority).exclude(pk__in=self._touched_now())
        rows = first.values_list(*names, named=True)[:MAX_KEYS_NAMED]
        rebuilt = (memory for memory in self.rebuilt if memory.priority == priority)
        merged = heapq.merge(rows, rebuilt, key=_recall_key, reverse=True)
        return tuple(row.key for row in itertools.islice(merged, MAX_KEYS_NAMED))

    def counts(self) -> dict[tuple[bool, int], int]:
        counts = super().counts()
        for memory in self.rebuilt:
            counts[(memory.verified, memory.priority)] += 1
        return {group: n - self.touched_today[group] for group, n in counts.items()}

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
    rebuilt here, and only as far as the recall's order, counts and narrowing need; the
    rest is read as the answer is rendered. Recall `about` a topic needs the search index,
    which holds only today's memories: not offered as of a moment."""
    selection = recall_selection(
        mind=mind,
        category=category,
        tag=tag,
        include_expired=include_expired,
        now=at,
        include_superseded=include_superseded,
    )
    filters = selection.search_filters()
    fields = {f.name: getattr(selection, f.name) for f in dataclasses.fields(selection)}
    if filters.impossible or at < mind.created_at:
        return RecallAsOf(**fields)
    # Today's tags are read only when a tag narrows the recall.
    names = (*_ORDERING, "tags") if filters.all_tags else _ORDERING
    walk = _walk(mind, at, memory_id=None, names=names)
    touched_today: Counter[tuple[bool, int]] = Counter()
    for pk, values in walk.today.items():
        now = _Held(pk, mind, values, partial=True)
        if filters.matches(now, now=at):
            touched_today[(now.verified, now.priority)] += 1
    held = []
    for pk, state in walk.states.items():
        if isinstance(state, dict) and _shown(state, "created_at") <= at:
            memory = _Held(pk, mind, state, partial=pk in walk.from_today)
            if filters.matches(memory, now=at):
                held.append(memory)
    stamps = _latest_writes(mind, at, [m.id for m in held if m.id in walk.restamped])
    for memory in held:
        if memory.id in walk.restamped:
            # No write at or before the moment left a row: it was as it was born.
            memory.updated_at = stamps.get(memory.id, memory.created_at)
    rebuilt = sorted(held, key=_recall_key, reverse=True)
    touched = frozenset(walk.states)
    return RecallAsOf(
        **fields, rebuilt=tuple(rebuilt), touched=touched, touched_today=touched_today
    )


# Of a memory touched since, what a recall reads for all of them: what narrows, counts and
# orders it (updated_at comes from the trail). The rest is read for the ones it shows.
_ORDERING = (
    "category",
    "key",
    "priority",
    "source",
    "verified",
    "expires_at",
    "created_at",
    "superseded_by_id",
)
# A memory's values as a recall renders them: the fields, its tags as JSON text, whether it
# had expired (recall.TEXT_NAMES).
_ROW_NAMES = (*VALUE_NAMES, "tags_text", "expired")
RebuiltRow = namedtuple("RebuiltRow", _ROW_NAMES)  # type: ignore[misc]


_HELD = (*_ORDERING, "updated_at")


class _Held:
    """A memory touched since that the mind held at the moment, as a recall orders, counts
    and narrows it (MemoryFilters.matches reads it as it reads a memory); `state` holds its
    values then, all of them, or (`partial`) those the walk set on today's values of
    _ORDERING: the others are today's."""

    __slots__ = (
        "category",
        "created_at",
        "expires_at",
        "id",
        "key",
        "mind",
        "partial",
        "priority",
        "source",
        "state",
        "superseded_by_id",
        "tags",
        "updated_at",
        "verified",
    )

    category: str
    key: str
    priority: int
    source: str
    verified: bool
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    superseded_by_id: str | None
    tags: list[str]

    def __init__(self, pk: str, mind: Mind, state: dict[str, Any], *, partial: bool) -> None:
        self.id, self.mind, self.state, self.partial = pk, mind, state, partial
        for name in _HELD:
            value = state.get(name, audit.PURGED_VALUE)
            setattr(self, name, _shown(state, name) if value is audit.PURGED_VALUE else value)
        # Only a recall narrowed by tag reads today's tags for every memory.
        self.tags = _shown(state, "tags") if "tags" in state or not partial else []

    def is_expired(self, now: datetime | None = None) -> bool:
        return has_expired(self.expires_at, now)

    @classmethod
    def rows(cls, held: Iterable[_Held], *, at: datetime, chunk: int) -> Iterator[Row]:
        """`held` as rows of every value (RebuiltRow), in the same order, `chunk` at a time:
        today's values of the partial ones read then, by primary key."""
        rest = (name for name in _ATTRIBUTES if name not in _ORDERING)
        names = tuple(dict.fromkeys(rest))
        rows = iter(held)
        while batch := tuple(itertools.islice(rows, chunk)):
            ids = [memory.id for memory in batch if memory.partial]
            today = {}
            if ids:
                read = Memory.objects.filter(pk__in=ids).values_list("id", *names)
                today = {row[0]: dict(zip(names, row[1:], strict=True)) for row in read}
            for memory in batch:
                yield memory._row(today.get(memory.id, {}), at)

    def _row(self, today: dict[str, Any], at: datetime) -> Row:
        state = {**today, **self.state} if self.partial else self.state
        values = {name: _shown(state, name) for name in _ATTRIBUTES}
        values.update(id=self.id, mind_id=self.mind.pk, updated_at=self.updated_at)
        values.update(
            tags_text=json.dumps(values["tags"]), expired=has_expired(values["expires_at"], at)
        )
        return RebuiltRow._make(values[name] for name in _ROW_NAMES)


def _shown(state: dict[str, Any], name: str) -> Any:
    """The value of attribute `name` in `state` as a memory shows it: a content purged since
    as purged, any other value purged since or not kept as the field's default (what an
    unsaved memory built from `state` holds)."""
    value = state.get(name, audit.PURGED_VALUE)
    if value is not audit.PURGED_VALUE:
        return value
    if name == "content" and "content" in state:
        return PURGED_CONTENT
    return _FIELDS[name].get_default()


_FIELDS = {field.attname: field for field in Memory._meta.concrete_fields}


# --- The walk back ----------------------------------------------------------------------------


def _rebuilt(
    mind: Mind, at: datetime, *, memory_id: str | None, untouched: bool = True
) -> MindAsOf:
    """The memories the mind held at `at` (or only `memory_id`): the ones audit rows since
    touched, rebuilt; with `untouched`, also the others, as they are now."""
    held = MindAsOf(mind=mind, at=at)
    if at < mind.created_at:
        return held  # before the mind existed: an empty mind
    if untouched:
        # A memory no row since touched is as it is now: only the touched ones are rebuilt.
        now = Memory.objects.filter(mind=mind, created_at__lte=at)
        if memory_id is not None:
            now = now.filter(pk=memory_id)
        for memory in now.exclude(pk__in=_touched_ids(mind, at)).iterator():
            memory.mind = mind
            held.memories.append(memory)
    walk = _walk(mind, at, memory_id=memory_id, names=_ATTRIBUTES)
    held.touched = frozenset(walk.states)
    stamps = _latest_writes(mind, at, [pk for pk in walk.restamped if pk in walk.states])
    for pk, state in walk.states.items():
        if state is None:
            continue  # created since
        if isinstance(state, _Purged):
            held.purged += 1
            continue
        if pk in walk.restamped:
            # No write at or before the moment left a row: it was as it was born.
            state["updated_at"] = stamps.get(pk, state["created_at"])
        memory = _memory(pk, mind, state)
        if memory.created_at <= at:  # (a row no create was recorded for: kept from its birth)
            held.memories.append(memory)
    return held


@dataclass
class _Walk:
    """What the walk back leaves: each memory the rows since touched, by id, as it was (None:
    the mind did not hold it; or purged since); the ids whose updated_at an undone write had
    stamped, to be read from the writes before the moment; and the ids whose values started
    from today's row, of which only `names` were read (the others are today's unless the
    walk set them)."""

    states: dict[str, State | None]
    restamped: set[str]
    from_today: set[str]
    # Today's values read (`names`) of the memories touched since that the mind held then.
    today: dict[str, dict[str, Any]]


def _walk(mind: Mind, at: datetime, *, memory_id: str | None, names: tuple[str, ...]) -> _Walk:
    """Walk back from today's values (`names` of them) of the memories the mind's audit rows
    since `at` touched (or only `memory_id`), undoing the rows."""
    events = MemoryEvent.objects.filter(mind=mind, at__gt=at)
    # Read as values, not instances; one created since is taken away by its create row.
    # By id alone: the rows name this mind's memories, and the primary key finds them.
    touched_now = Memory.objects.filter(pk__in=_touched_ids(mind, at), created_at__lte=at)
    if memory_id is not None:
        events, touched_now = events.filter(memory_id=memory_id), touched_now.filter(pk=memory_id)
    rows_now = touched_now.values_list("id", *names)
    today = {row[0]: dict(zip(names, row[1:], strict=True)) for row in rows_now}
    walk = _Walk(states={}, restamped=set(), from_today=set(), today=today)
    rows = _events_back(events)
    try:
        _walk_back(walk, rows)
    finally:
        rows.close()  # a refusal stops the walk half way: its cursor closes now
    return walk


class _Event:
    """An audit row as the walk reads it: its `changes` decoded from the column's JSON text
    by orjson (recall.driver_rows: Django's per-row conversion is most of a walk's reading)
    when first read (the rows of a memory created since are never read)."""

    __slots__ = ("_changes", "action", "id", "memory_id")

    def __init__(self, pk: int, memory_id: str, action: str, changes: Any) -> None:
        self.id, self.memory_id, self.action, self._changes = pk, memory_id, action, changes

    @property
    def changes(self) -> dict[str, Any]:
        if isinstance(self._changes, str | bytes):
            self._changes = orjson.loads(self._changes)
        changes: dict[str, Any] = self._changes
        return changes

    @property
    def at(self) -> datetime:
        """When it was written (read again: only a refusal names it)."""
        return MemoryEvent.objects.values_list("at", flat=True).get(pk=self.id)


def _events_back(events: QuerySet[MemoryEvent, Any]) -> Generator[_Event, None, None]:
    """`events` newest first."""
    rows = events.order_by("-at", "-id").values_list("id", "memory_id", "action", "changes")
    for row in driver_rows(rows, WALK_CHUNK):
        yield _Event(*row)


def _touched_ids(mind: Mind, at: datetime) -> QuerySet[MemoryEvent, Any]:
    """The ids of the memories of `mind` that audit rows written after `at` touched (a
    subquery)."""
    return MemoryEvent.objects.filter(mind=mind, at__gt=at).values("memory_id")


def _walk_back(walk: _Walk, events: Iterator[_Event]) -> None:
    """Undo `events` (newest first) on `walk.states` (model attributes to values), which take
    a memory's values from `walk.today` at its first row (None: the mind did not hold it)."""
    states, restamped, from_today = walk.states, walk.restamped, walk.from_today
    for event in events:
        pk, action = event.memory_id, event.action
        if pk not in states:
            values = walk.today.get(pk)
            states[pk] = None if values is None else dict(values)
            if values is not None:
                from_today.add(pk)
        if action == Action.PURGE:
            states[pk] = _PURGED
        elif action in (Action.CREATE, Action.UNDELETE):
            states[pk] = None  # before it, the mind did not hold the memory
        elif isinstance(states[pk], _Purged):
            continue  # its earlier rows hold nothing more
        elif action == Action.DELETE:
            states[pk] = _before_delete(event)
            from_today.discard(pk)
            restamped.discard(pk)  # the tombstone kept its updated_at
        elif isinstance(state := states[pk], dict):
            # Today's values hold every kept field (read or not); a tombstone only its own.
            every = pk in from_today
            for name, change in event.changes.items():
                kept = _KEPT.get(name)
                if kept is not None and (every or kept.attribute in state):
                    state[kept.attribute] = _old(event, change, kept)
            restamped.add(pk)
        if not isinstance(states[pk], dict):
            from_today.discard(pk)


def _before_delete(event: _Event) -> State:
    """The memory as its delete found it: every value its tombstone kept."""
    if audit.is_purged(event.changes.get("key")):
        return _PURGED  # the whole memory was purged since (a redaction leaves the key)
    changes = ((_KEPT.get(name), change) for name, change in event.changes.items())
    return {kept.attribute: _old(event, change, kept) for kept, change in changes if kept}


def _old(event: _Event, change: Any, kept: PublicField) -> Any:
    """The value a row replaced, as the model holds it; PURGED_VALUE when purged since;
    Conflict when folded."""
    if type(change) is dict and "old" in change:  # neither folded nor purged
        return kept.decode(change["old"])
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
