"""A mind as of a moment: the memories it held then, each with its values then, rebuilt from
the audit trail (API.md §9.10).

The rebuild walks back from today: it starts from the mind's rows as they are now, and
undoes the mind's audit rows written after the moment, newest first. An update, verify,
unverify or supersede gives each field it changed its old value back; a delete brings the
memory back with the values its tombstone kept; a create or an undelete takes it away; a
purge leaves it out (its values are gone). `updated_at`, which the trail does not keep as
a value, is the time of the memory's latest write at or before the moment: every write that
records an audit row stamps the memory with the row's time. A memory no row since touched
is as it is now: only the touched ones are rebuilt. What the rebuild reads: the touched
memories now, the audit rows since the moment, and the latest write time of each memory
those rows changed.

A recall as of a moment (RecallAsOf) reads less: the memories no write touched since as
today's recall reads them, and, merged with them in recall order, the ones the mind held
then that a write since changed or deleted, ordered, counted and named by their spans
(memories/spans.py); of those, only the ones the recall reaches are rebuilt, a chunk at a
time. `spans_from_trail` builds a mind's spans by the same walk. Design notes:
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
from collections import namedtuple
from collections.abc import Collection, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db.models import Case, Max, Q, QuerySet, When

from core.errors import Conflict, Invalid, NotFound
from memories import audit, spans
from memories.fields import FIELDS_BY_NAME, TOMBSTONE_FIELDS, VALUE_NAMES, PublicField, iso
from memories.filters import DEFAULT_SORT, NO_FILTERS, Expired, MemoryFilters, sorted_memories
from memories.models import Memory, MemoryEvent, MemoryQuerySet, MemorySpan, has_expired
from memories.recall import (
    MAX_KEYS_NAMED,
    STREAM_CHUNK,
    TEXT_NAMES,
    WHOLE_CHUNK,
    RecallSelection,
    Row,
    driver_rows,
    grouped_counts,
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
# The fields a tombstone keeps, by the name the trail gives them: the values rebuilt.
_KEPT = {name: FIELDS_BY_NAME[name] for name in TOMBSTONE_FIELDS}
_ATTRIBUTES = tuple(kept.attribute for kept in _KEPT.values())
# Audit rows read at a time on the walk back.
WALK_CHUNK = 500
# The memories a recall rebuilds first, before a chunk at a time.
FIRST_REBUILT = 16


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
    """A recall of the mind as it was at `now`. A memory no write touched since is as it is
    now, updated at or before the moment (every audited write stamps it with its time): those
    are read as today's recall reads them. The others the mind held then are the spans the
    writes since ended (memories/spans.py), which order, narrow and count them; their values
    are rebuilt from the trail a chunk at a time, as the recall reaches them; the two are
    merged in recall order. Rendered by memories.recall like any selection."""

    def _narrowed(self, expired: Expired) -> MemoryQuerySet:
        if self.now < self.mind.created_at:
            return Memory.objects.none()  # before the mind existed: an empty mind
        return super()._narrowed(expired)

    def untouched(self) -> MemoryQuerySet:
        """Today's memories no write touched since the moment, in recall order."""
        # A CASE, not a range on updated_at, which SQLite would serve by sorting the mind.
        since = Case(When(updated_at__gt=self.now, then=True), default=False)
        return self.memories().alias(since=since).filter(since=False)

    def ended(self) -> QuerySet[MemorySpan, MemorySpan]:
        """The spans of the memories held at the moment that a write since ended, in recall
        order."""
        ended = spans.ended_since(self.mind, self.now)
        return self._spans(ended).order_by("-priority", "-updated_at", "-memory_id")

    def _spans(self, spans_: QuerySet[MemorySpan, MemorySpan]) -> QuerySet[MemorySpan, MemorySpan]:
        filters = self._filters("include" if self.include_expired else "hide")
        if filters.impossible or self.now < self.mind.created_at:
            return MemorySpan.objects.none()
        return spans.narrowed(spans_, filters, now=self.now)

    def rows(self, *, for_json: bool, whole: bool) -> Iterable[Row]:
        today = recall_rows(self, for_json=for_json, whole=whole, memories=self.untouched())
        chunk = WHOLE_CHUNK if whole else STREAM_CHUNK
        ended = driver_rows(self.ended().values_list("memory_id", "updated_at"), chunk)
        rebuilt = _rebuilt_rows(self.mind, self.now, ended, chunk, for_json=for_json)
        return heapq.merge(today, rebuilt, key=_recall_key, reverse=True)

    def first_keys(self, priority: int) -> tuple[str, ...]:
        names = ("priority", "updated_at", "id", "key")
        today = self.untouched().filter(priority=priority).values_list(*names)
        ended = self.ended().filter(priority=priority)
        firsts = (
            today[:MAX_KEYS_NAMED],
            ended.values_list("priority", "updated_at", "memory_id", "key")[:MAX_KEYS_NAMED],
        )
        merged = heapq.merge(*firsts, key=_first_key, reverse=True)
        return tuple(row[3] for row in itertools.islice(merged, MAX_KEYS_NAMED))

    def counts(self) -> dict[tuple[bool, int], int]:
        # Today's memories judged at the moment, less those written since, plus the ones
        # held then that a write since changed or deleted.
        counts = super().counts()
        since = grouped_counts(self._spans(spans.opened_since(self.mind, self.now)))
        for group, n in grouped_counts(self.ended()).items():
            counts[group] += n - since[group]
        return counts


def _recall_key(row: Row) -> tuple[int, datetime, str]:
    """Recall order, reversed (priority, updated_at and id all descend). Every time is UTC,
    compared without its zone: the driver's rows (SQLite's, naive) merge with the ORM's."""
    return (row.priority, row.updated_at.replace(tzinfo=None), row.id)


def _first_key(row: tuple[int, datetime, str, str]) -> tuple[int, datetime, str]:
    """_recall_key of a (priority, updated_at, id, key) row."""
    return (row[0], row[1].replace(tzinfo=None), row[2])


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
    renderers take it as they take any selection. Conflict, before anything is read, when a
    value the rebuild may need was folded. Recall `about` a topic needs the search index,
    which holds only today's memories: not offered as of a moment."""
    selection = recall_selection(
        mind=mind,
        category=category,
        tag=tag,
        include_expired=include_expired,
        now=at,
        include_superseded=include_superseded,
    )
    _refuse_folded(mind, at)
    return RecallAsOf(**{f.name: getattr(selection, f.name) for f in dataclasses.fields(selection)})


def _rebuilt_rows(
    mind: Mind,
    at: datetime,
    ended: Iterator[tuple[str, datetime]],
    chunk: int,
    *,
    for_json: bool,
) -> Iterator[Row]:
    """The rows of the memories of the `ended` spans ((id, updated_at) as the driver reads
    them, in recall order) as they were at `at`, rebuilt a chunk at a time: a few first (a
    budgeted recall shows a few), then `chunk`. The text's rows (TextRow) hold only what the
    text shows; JSON's (RebuiltRow) every value."""
    make, names = (RebuiltRow, _ATTRIBUTES) if for_json else (TextRow, _TEXT_ATTRIBUTES)
    fields: tuple[str, ...] = make._fields
    size = min(FIRST_REBUILT, chunk)
    while batch := tuple(itertools.islice(ended, size)):
        walk = _walk(mind, at, memory_ids=[pk for pk, _ in batch], names=names)
        for pk, updated_at in batch:
            state = walk.states.get(pk)
            if isinstance(state, dict):
                values = {name: _shown(state, name) for name in names}
                values.update(id=pk, mind_id=mind.pk, updated_at=_utc(updated_at))
                values.update(
                    tags_text=json.dumps(values["tags"]),
                    expired=has_expired(values["expires_at"], at),
                )
                yield make._make(values[name] for name in fields)
        size = chunk


def _utc(value: datetime) -> datetime:
    """A time the driver read, aware (SQLite's driver gives it naive, in UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# A memory's values as a recall renders them: JSON's (the fields, its tags as JSON text,
# whether it had expired: recall.TEXT_NAMES); the text's (what orders it, and TEXT_NAMES).
RebuiltRow = namedtuple("RebuiltRow", (*VALUE_NAMES, "tags_text", "expired"))  # type: ignore[misc]
TextRow = namedtuple("TextRow", ("id", "updated_at", *TEXT_NAMES))  # type: ignore[misc]
# The values the text's rows are made of (tags_text and expired come from tags and expiry).
_TEXT_ATTRIBUTES = ("category", "key", "content", "tags", "priority", "verified", "expires_at")


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


def _rebuilt(mind: Mind, at: datetime, *, memory_id: str | None) -> MindAsOf:
    """The memories the mind held at `at` (or only `memory_id`): the ones audit rows since
    touched, rebuilt; the others as they are now."""
    held = MindAsOf(mind=mind, at=at)
    if at < mind.created_at:
        return held  # before the mind existed: an empty mind
    # A memory no row since touched is as it is now: only the touched ones are rebuilt.
    now = Memory.objects.filter(mind=mind, created_at__lte=at)
    if memory_id is not None:
        now = now.filter(pk=memory_id)
    for memory in now.exclude(pk__in=_touched_ids(mind, at)).iterator():
        memory.mind = mind
        held.memories.append(memory)
    ids = None if memory_id is None else [memory_id]
    walk = _walk(mind, at, memory_ids=ids, names=_ATTRIBUTES)
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
    # Today's values read (`names`) of the memories touched since that the mind held then,
    # until the walk takes them.
    today: dict[str, dict[str, Any]]


def _walk(
    mind: Mind, at: datetime, *, memory_ids: Collection[str] | None, names: tuple[str, ...]
) -> _Walk:
    """Walk back from today's values (`names` of them) of the memories the mind's audit rows
    since `at` touched (or only `memory_ids`), undoing the rows."""
    events = MemoryEvent.objects.filter(mind=mind, at__gt=at)
    # Read as values, not instances; one created since is taken away by its create row.
    # By id alone: the rows name this mind's memories, and the primary key finds them.
    ids: Any = _touched_ids(mind, at)
    if memory_ids is not None:
        # By id alone (an id is one mind's for good): (memory_id, at) serves it, where the
        # (mind, at) range would read every row since.
        events = MemoryEvent.objects.filter(memory_id__in=memory_ids, at__gt=at)
        ids = memory_ids
    touched_now = Memory.objects.filter(pk__in=ids, created_at__lte=at)
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
    for event in events:
        _undo(walk, event)


def _undo(walk: _Walk, event: _Event) -> None:
    """Undo one row on `walk.states`; Conflict, and nothing undone, when a value it needs was
    folded."""
    states, restamped, from_today = walk.states, walk.restamped, walk.from_today
    pk, action = event.memory_id, event.action
    if pk not in states:
        values = states[pk] = walk.today.pop(pk, None)  # the walk's own from here
        if values is not None:
            from_today.add(pk)
    if action == Action.PURGE:
        states[pk] = _PURGED
    elif action in (Action.CREATE, Action.UNDELETE):
        states[pk] = None  # before it, the mind did not hold the memory
    elif isinstance(states[pk], _Purged):
        return  # its earlier rows hold nothing more
    elif action == Action.DELETE:
        states[pk] = _before_delete(event)
        from_today.discard(pk)
        restamped.discard(pk)  # the tombstone kept its updated_at
    elif isinstance(state := states[pk], dict):
        # Today's values hold every kept field (read or not); a tombstone only its own.
        every = pk in from_today
        changes = ((_KEPT.get(name), change) for name, change in event.changes.items())
        state.update(
            {
                kept.attribute: _old(event, change, kept)
                for kept, change in changes
                if kept is not None and (every or kept.attribute in state)
            }
        )
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
        raise _folded(event)
    if audit.is_purged(change):
        return audit.PURGED_VALUE
    return kept.decode(change.get("old"))


def _folded(event: _Event) -> Conflict:
    """The refusal of a rebuild that needs a value `event` held, folded since."""
    return Conflict(
        f"This mind's history up to {iso(event.at)} was folded to keep it within its "
        "budget (SYNAPSE_MAX_HISTORY_BYTES), so the mind before then cannot be rebuilt "
        f"exactly: give as_of={iso(event.at)} or later."
    )


def _refuse_folded(mind: Mind, at: datetime) -> None:
    """Conflict (as the walk back would meet it) when a row since `at` was folded. Folding
    takes the oldest rows first: only the rows before the oldest unfolded one can be."""
    unfolded = MemoryEvent.objects.filter(mind=mind, size__gt=0).order_by("at", "id")
    first = unfolded.values_list("at", "id").first()
    if first is not None and first[0] <= at:
        return
    # Rows that hold no values: folded, or purged (a purge's own, and every row it purged).
    empty = MemoryEvent.objects.filter(mind=mind, at__gt=at, size=0).exclude(action=Action.CREATE)
    if first is not None:
        empty = empty.filter(Q(at__lt=first[0]) | Q(at=first[0], id__lt=first[1]))
    for event in _events_back(empty):
        if any(audit.is_folded(change) for change in event.changes.values()):
            raise _folded(event)


def spans_from_trail(mind: Mind) -> list[dict[str, Any]]:
    """The spans (rows of MemorySpan) of `mind` as its audit trail tells them: walking back
    from today's values through every row, each write that left the memory held opens a
    span with the values it left, ended by the memory's next row. A folded value stops the
    walk there: a recall before it is refused (_refuse_folded), so the spans it has not
    reached open when their memories were born."""
    read = Memory.objects.filter(mind=mind).values_list("id", *_ATTRIBUTES)
    today = {row[0]: dict(zip(_ATTRIBUTES, row[1:], strict=True)) for row in read}
    walk = _Walk(states={}, restamped=set(), from_today=set(), today=today)
    found: list[dict[str, Any]] = []
    ends: dict[str, datetime] = {}

    def opened(pk: str, state: dict[str, Any], *, start: datetime, stamp: datetime) -> None:
        values = {name: _shown(state, name) for name in spans.SPANNED}
        values["updated_at"] = stamp
        found.append(spans.span_row(pk, mind.pk, values, start=start, end=ends.get(pk)))

    stopped: tuple[str, datetime] | None = None
    events = MemoryEvent.objects.filter(mind=mind).order_by("-at", "-id")
    read_back = events.values_list("id", "memory_id", "action", "changes", "at")
    for *row, at in read_back.iterator(chunk_size=WALK_CHUNK):
        event = _Event(*row)
        pk = event.memory_id
        state = walk.states[pk] if pk in walk.states else walk.today.get(pk)
        if event.action in spans.OPENING and isinstance(state, dict):
            opened(pk, state, start=at, stamp=at if pk in walk.restamped else state["updated_at"])
        try:
            _undo(walk, event)
        except Conflict:
            stopped = (pk, at)
            break
        ends[pk] = at
    # Held before the walk's first (or last undone) row of them: opened at their birth.
    left = dict(walk.today)  # the ones no row touched
    left.update((pk, s) for pk, s in walk.states.items() if isinstance(s, dict))
    stamps: dict[str, datetime] = {}
    if stopped is not None:
        left.pop(stopped[0], None)  # its span opens at the row that stopped the walk
        stamps = _latest_writes(mind, stopped[1], [pk for pk in left if pk in walk.restamped])
    for pk, state in left.items():
        born: datetime = state["created_at"]
        stamp: datetime = stamps.get(pk, born) if pk in walk.restamped else state["updated_at"]
        opened(pk, state, start=born, stamp=stamp)
    return [span for span in found if span["end"] is None or span["start"] < span["end"]]


def _latest_writes(mind: Mind, at: datetime, ids: list[str]) -> dict[str, datetime]:
    """The time of each memory's latest write at or before `at` that stamped it (spans.OPENING)."""
    stamps: dict[str, datetime] = {}
    for start in range(0, len(ids), SAME_VALUES_CHUNK):
        chunk = ids[start : start + SAME_VALUES_CHUNK]
        rows = (
            MemoryEvent.objects.filter(
                mind=mind, memory_id__in=chunk, at__lte=at, action__in=spans.OPENING
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
