"""Recall: what an agent reads at the start of a session, most important first.

`recall_selection()` picks the memories (live, filtered, in recall order, or `about` a topic:
the critical ones, then the ones the search ranks most relevant);
`recall_render_text()` and `recall_render_json()` turn that selection into the answer of
`GET /memory/recall`, cut to a token budget; `recall_text_stream()` and `recall_json_stream()`
give a whole selection in pieces as its rows are read. The text layout, the budget's rules,
the JSON form and what `about` picks are in docs/recall.md.
"""

from __future__ import annotations

import dataclasses
import json as jsonlib
import unicodedata
from collections import deque, namedtuple
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection, connections, transaction
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    QuerySet,
    TextField,
    Value,
)
from django.db.models.functions import Cast
from django.utils import timezone

from core.errors import Invalid
from memories.fields import PRIORITY_NAMES, VALUE_NAMES, memory_to_dict
from memories.filters import Expired, MemoryFilters
from memories.models import Memory, MemoryQuerySet, Priority, expired_q
from memories.search import MAX_LIMIT as SEARCH_MAX_LIMIT
from memories.search import SearchQueryError, memory_search_scored, parse_query
from minds.models import Mind

CHARS_PER_TOKEN = 4
MAX_KEYS_NAMED = 10
# The largest budget: far beyond any model's context; what a budget keeps is held in memory.
MAX_BUDGET = 1_000_000
# The budget of an answer that is built whole before it is sent (MCP's: one JSON body) when
# the caller names none: a generous read for a model's context, a few hundred KB at most.
DEFAULT_BUDGET = 20_000
# Rows stream in small chunks so a budgeted recall reads little more than what it shows.
STREAM_CHUNK = 100
# Without a budget every row is read: in larger chunks, and sent in pieces of about this
# many characters.
WHOLE_CHUNK = 1000
PIECE_CHARS = 64 * 1024
# How far down the search's ranking a recall `about` a topic reads: its largest page. Every
# memory below it counts as on another topic.
ABOUT_DEPTH = SEARCH_MAX_LIMIT

# What the text needs of a memory, read by name as plain values (no model instances): the
# tags as their JSON text (decoded once per distinct combination, see _tags_line), and
# whether the memory has expired (only with include_expired can it have; see recall_rows).
TEXT_NAMES = ("category", "priority", "verified", "key", "content", "tags_text", "expired")
PRIORITY_CAPS = {p.value: p.label.upper() for p in Priority}
NON_CRITICAL_DESC = sorted((p.value for p in Priority if p != Priority.CRITICAL), reverse=True)

# A memory's values by name (a named tuple): TEXT_NAMES, plus VALUE_NAMES for JSON.
Row = Any


@dataclass(frozen=True)
class RecallSelection:
    """Which memories of a mind a recall shows; `memories()` reads them in recall order."""

    mind: Mind
    category: str | None
    tag: str | None
    include_expired: bool
    now: datetime
    about: str | None = None
    include_superseded: bool = False

    def search_filters(self) -> MemoryFilters:
        """The selection's narrowing as search filters: what the search for `about` keeps."""
        expired: Expired = "include" if self.include_expired else "hide"
        return self._filters(expired)

    def _filters(self, expired: Expired) -> MemoryFilters:
        return MemoryFilters(
            category=self.category,
            tag=self.tag,
            expired=expired,
            superseded=self.include_superseded,
        )

    def _narrowed(self, expired: Expired) -> MemoryQuerySet:
        filters = self._filters(expired)
        if filters.impossible:
            return Memory.objects.none()
        return filters.apply(Memory.objects.filter(mind=self.mind), now=self.now)

    def filtered(self) -> MemoryQuerySet:
        """The mind's memories narrowed by category and tag, expired ones included."""
        return self._narrowed("include")

    def memories(self) -> MemoryQuerySet:
        return self._narrowed("include" if self.include_expired else "hide").recall_order()

    def rows(self, *, for_json: bool, whole: bool) -> Iterable[Row]:
        """The selection's rows in recall order (see recall_rows)."""
        return recall_rows(self, for_json=for_json, whole=whole)

    def first_keys(self, priority: int) -> tuple[str, ...]:
        """The keys of the selection's first MAX_KEYS_NAMED memories of `priority`."""
        return _first_keys(self.memories(), priority)

    def counts(self) -> dict[tuple[bool, int], int]:
        """How many memories the selection holds, by (verified, priority).

        Counted as "all minus expired": the first count is an index-only scan of the
        (mind, verified, priority) index, the second touches only the expired rows, where
        counting the live rows directly would read every row of the mind.
        """
        return self.counts_of(self.filtered())

    def counts_of(self, filtered: MemoryQuerySet) -> dict[tuple[bool, int], int]:
        """counts() of `filtered`, a part of filtered()."""
        counts = grouped_counts(filtered)
        if not self.include_expired:
            for group, expired in grouped_counts(filtered.expired(self.now)).items():
                counts[group] -= expired
        return counts


def grouped_counts(memories: QuerySet[Any, Any]) -> dict[tuple[bool, int], int]:
    counts: dict[tuple[bool, int], int] = {
        (verified, p.value): 0 for verified in (False, True) for p in Priority
    }
    rows = (
        memories.order_by()
        .values("verified", "priority")
        .annotate(n=Count("*"))  # COUNT(*): COUNT(id) would read the table, not the index
        .values_list("verified", "priority", "n")
    )
    for verified, priority, n in rows:
        counts[(bool(verified), priority)] += n
    return counts


def recall_selection(
    *,
    mind: Mind,
    category: str | None = None,
    tag: str | None = None,
    include_expired: bool = False,
    now: datetime | None = None,
    about: str | None = None,
    include_superseded: bool = False,
) -> RecallSelection:
    """The mind's memories that recall shows.

    Not expired at `now` (unless `include_expired`), not superseded (unless
    `include_superseded`), narrowed to `category` and `tag`
    (matched case-insensitively); read in recall order: critical → low, then most recently
    updated first, then by id so the order is stable. With `about` (the words of a topic,
    as a search takes them), the critical ones, then the ones most relevant to it: see
    `_about_plan`. Invalid naming `about` when there is nothing to search for in it.
    """
    return RecallSelection(
        mind=mind,
        category=category or None,
        tag=tag.strip().lower() if tag and tag.strip() else None,
        include_expired=include_expired,
        now=now or timezone.now(),
        about=_about_checked(about),
        include_superseded=include_superseded,
    )


def _about_checked(about: str | None) -> str | None:
    """`about` as given, once the search would take it (the same limits as its `q`)."""
    if about is None:
        return None
    if not about.strip():
        raise Invalid.one("about", "Give the topic in a few words, or leave about out.")
    try:
        parse_query(about)
    except SearchQueryError as exc:
        raise Invalid.one("about", str(exc)) from None
    return about


@dataclass(frozen=True)
class Omitted:
    """Memories of one priority that the budget left out; or, with priority None, those a
    recall `about` a topic leaves out as on other topics."""

    priority: int | None
    count: int
    keys: tuple[str, ...]  # the first ones in the recall's order, at most MAX_KEYS_NAMED

    @property
    def line(self) -> str:
        noun = "memory" if self.count == 1 else "memories"
        if self.priority is None:
            text, hint = f"… {self.count} {noun} on other topics left out", "recall without about"
        else:
            text = f"… {self.count} {PRIORITY_NAMES[self.priority]}-priority {noun} left out"
            hint = "raise the budget"
        if self.keys:
            text += ": " + ", ".join(self.keys)
            if self.count > len(self.keys):
                text += ", …"
        return text + f" (use search or {hint})"

    def as_dict(self) -> dict[str, Any]:
        named = {"count": self.count, "keys": list(self.keys)}
        if self.priority is None:
            return named
        return {"priority": PRIORITY_NAMES[self.priority], **named}


@dataclass
class RecallPlan:
    """What an answer shows: the counts, the kept memories and what was left out."""

    total: int
    verified: int
    header: str
    entries: list[str]  # rendered text entries, in order
    kept: list[Row]  # the rows shown, in order
    omitted: list[Omitted]


@dataclass
class AboutPlan(RecallPlan):
    """A recall `about` a topic: also how its relevance was found (the search's `mode` and
    `warnings`) and what it left out as on other topics (the last of `omitted`, if any)."""

    mode: str = "keyword"
    warnings: list[str] = dataclasses.field(default_factory=list)


def recall_render_text(*, selection: RecallSelection, budget: int | None = None) -> str:
    """The recall text of `selection` (see the module docstring for the exact layout)."""
    if budget is None and selection.about is None:
        return "".join(recall_text_stream(selection=selection))
    plan = _planned(selection, budget=budget, for_json=False)
    parts = [plan.header]
    for entry in plan.entries:
        parts.append("\n")
        parts.append(entry)
        parts.append("\n")
    if plan.omitted:
        parts.append(_closing_text(plan.omitted))
    return "".join(parts)


def recall_render_json(*, selection: RecallSelection, budget: int | None = None) -> dict[str, Any]:
    """The same selection as JSON: the counts, the memories in order, what was left out.
    `about` adds itself, the search's `mode` and `warnings`, and `other_topics`."""
    if budget is None and selection.about is None:
        answer, memories = recall_json_stream(selection=selection)
        answer["memories"] = list(memories)
        return answer
    plan = _planned(selection, budget=budget, for_json=True)
    answer = {
        **_json_head(selection, plan.total, plan.verified, budget),
        "memories": [memory_to_dict(row) for row in plan.kept],
        "omitted": [o.as_dict() for o in plan.omitted if o.priority is not None],
    }
    if isinstance(plan, AboutPlan):
        other = next((o for o in plan.omitted if o.priority is None), Omitted(None, 0, ()))
        answer.update(
            about=selection.about,
            mode=plan.mode,
            warnings=list(plan.warnings),
            other_topics=other.as_dict(),
        )
    return answer


def recall_text_stream(*, selection: RecallSelection) -> Iterator[str]:
    """The whole recall text of `selection` (no budget) in pieces, read as they are sent.

    The counts are read here, at once; the rows only as the pieces are asked for. A recall
    `about` a topic is read whole first (it is one search and at most ABOUT_DEPTH rows more
    than its critical memories): one piece.
    """
    if selection.about is not None:
        return iter([recall_render_text(selection=selection)])
    total, verified = _totals(selection)
    return _text_pieces(selection, _header(selection.mind, total, verified))


def _text_pieces(selection: RecallSelection, header: str) -> Iterator[str]:
    yield header
    pieces: list[str] = []
    size = 0
    with _streaming_reads():
        for number, row in enumerate(selection.rows(for_json=False, whole=True), 1):
            entry = _entry(number, row)
            pieces += ("\n", entry, "\n")
            size += len(entry) + 2
            if size >= PIECE_CHARS:
                yield "".join(pieces)
                pieces, size = [], 0
    yield "".join(pieces)


def recall_json_stream(
    *, selection: RecallSelection
) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The whole recall of `selection` as JSON (no budget): the answer with its `memories`
    left empty, and the memories, read one by one as they are asked for. A recall `about` a
    topic is read whole first, as in recall_text_stream."""
    if selection.about is not None:
        answer = recall_render_json(selection=selection)
        return answer, iter(answer.pop("memories"))
    total, verified = _totals(selection)
    answer = {**_json_head(selection, total, verified, None), "memories": [], "omitted": []}
    return answer, _json_rows(selection)


def _json_rows(selection: RecallSelection) -> Iterator[dict[str, Any]]:
    with _streaming_reads():
        for row in selection.rows(for_json=True, whole=True):
            yield memory_to_dict(row)


def _json_head(
    selection: RecallSelection, total: int, verified: int, budget: int | None
) -> dict[str, Any]:
    mind = selection.mind
    return {
        "mind": {"id": mind.id, "name": mind.name},
        "total": total,
        "verified": verified,
        "unverified": total - verified,
        "budget": budget,
    }


def _totals(selection: RecallSelection) -> tuple[int, int]:
    """How many memories the selection holds, and how many of them are verified."""
    counts = selection.counts()
    verified = sum(n for (is_verified, _), n in counts.items() if is_verified)
    return sum(counts.values()), verified


# --- Rendering pieces -------------------------------------------------------------------------


def _header(mind: Mind, total: int, verified: int) -> str:
    name = " ".join(mind.name.splitlines())
    return (
        f"Mind: {name}\n"
        f"Memories: {total} total ({verified} verified, {total - verified} unverified)\n"
    )


def _about_lines(about: str, warnings: list[str]) -> str:
    """The header's lines of a recall `about` a topic: the topic, then the search's warnings,
    each on one line (control characters as spaces), so no text given can look like an entry."""
    lines = [f"About: {_one_line(about)}", *(f"Warning: {_one_line(w)}" for w in warnings)]
    return "".join(line + "\n" for line in lines)


def _one_line(text: str) -> str:
    spaced = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    return " ".join(spaced.split())


def _entry(number: int, row: Row) -> str:
    head = f"[{number:03d}] {row.category} ({PRIORITY_CAPS[row.priority]}) "
    head += "[verified]" if row.verified else "[unverified]"
    if row.expired:
        head += " [expired]"  # only reachable with include_expired
    # splitlines() also breaks on \r, \u2028 …: every visual line gets its indent, so content
    # can never fake an entry boundary or a header.
    lines = row.content.splitlines() or [""]
    return f"{head}\n  {row.key}\n  " + "\n  ".join(lines) + _tags_line(row.tags_text)


def recall_caches_forget() -> None:
    """Empty the cache of tag lines (a purged memory's tags must not stay in memory)."""
    _tags_line.cache_clear()


@lru_cache(maxsize=4096)
def _tags_line(tags_text: str) -> str:
    # Minds reuse a few tag combinations over and over: decode and join each one once.
    tags = jsonlib.loads(tags_text)
    return "\n  Tags: " + ", ".join(tags) if tags else ""


def _closing_text(omitted: list[Omitted]) -> str:
    return "\n" + "".join(o.line + "\n" for o in omitted) if omitted else ""


def _closing_len(omitted: list[Omitted]) -> int:
    return len(_closing_text(omitted))


# --- Planning ---------------------------------------------------------------------------------


def _streaming_reads() -> AbstractContextManager[Any]:
    """A transaction on PostgreSQL, so that iterator() streams.

    Outside a transaction Django declares its server-side cursor WITH HOLD, and PostgreSQL
    then computes the whole result before the first row. SQLite needs none (and would take
    its write lock for one: transactions there are IMMEDIATE). Inside one already, nothing.
    """
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        return transaction.atomic()
    return nullcontext()


def recall_rows(
    selection: RecallSelection,
    *,
    for_json: bool,
    whole: bool,
    memories: MemoryQuerySet | None = None,
) -> Iterable[Row]:
    """The selection's rows in recall order, by name: TEXT_NAMES, plus VALUE_NAMES for JSON;
    read a chunk at a time as they are asked for (larger chunks when `whole`: every row is
    wanted). `memories`: a narrower part of selection.memories(), then with their ids and
    update times (a mind as of a moment orders other memories among them; on SQLite the
    whole text's are the driver's, naive UTC)."""
    expired: Any = Value(False)  # memories() left the expired ones out
    if selection.include_expired:
        expired = ExpressionWrapper(expired_q(selection.now), BooleanField())
    names = (*VALUE_NAMES, *TEXT_NAMES) if for_json else TEXT_NAMES
    whole_text = whole and not for_json
    if memories is None:
        memories = selection.memories()
    else:
        names = ("id", "updated_at", *names)
    memories = memories.annotate(tags_text=Cast("tags", TextField()), expired=expired)
    rows = memories.values_list(*dict.fromkeys(names), named=True)
    if whole_text and connections[rows.db].vendor == "sqlite":
        # The whole text needs no conversion: `verified` and `expired` are only tested for truth.
        return driver_rows(rows, WHOLE_CHUNK, named=True)
    return rows.iterator(chunk_size=WHOLE_CHUNK if whole else STREAM_CHUNK)


def driver_rows(rows: QuerySet[Any, Any], chunk: int, *, named: bool = False) -> Iterator[Any]:
    """The rows as the database driver returns them (tuples, or named by their columns), read
    `chunk` at a time. Django's per-row value conversion is a large share of a whole-mind
    recall and of a walk back through the audit trail, and neither needs it. SQLite's cursor
    reads as it is fetched from (elsewhere a plain cursor would hold the whole result)."""
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:  # .none(): nothing to read
        return
    with connections[rows.db].cursor() as cursor:
        cursor.execute(sql, params)
        if not named:
            while fetched := cursor.fetchmany(chunk):
                yield from fetched
            return
        row = namedtuple("Row", [column[0] for column in cursor.description])  # type: ignore[misc]
        while fetched := cursor.fetchmany(chunk):
            yield from map(row._make, fetched)


class _Lookahead:
    """An iterator of rows that can peek at the keys coming next."""

    def __init__(self, rows: Iterable[Row]) -> None:
        self._it: Iterator[Row] = iter(rows)
        self._buffer: deque[Row] = deque()

    def __iter__(self) -> _Lookahead:
        return self

    def __next__(self) -> Row:
        return self._buffer.popleft() if self._buffer else next(self._it)

    def keys_ahead(self, priority: int, limit: int) -> tuple[str, ...]:
        """Keys of the next `limit` rows, as long as they have `priority`."""
        keys: list[str] = []
        index = 0
        while len(keys) < limit:
            if index == len(self._buffer):
                row = next(self._it, None)
                if row is None:
                    break
                self._buffer.append(row)
            row = self._buffer[index]
            if row.priority != priority:
                break
            keys.append(row.key)
            index += 1
        return tuple(keys)


def _first_keys(memories: QuerySet[Memory], priority: int) -> tuple[str, ...]:
    keys = memories.filter(priority=priority).values_list("key", flat=True)
    return tuple(keys[:MAX_KEYS_NAMED])


def _plan(selection: RecallSelection, *, budget: int, for_json: bool) -> RecallPlan:
    mind = selection.mind
    # Exact counts come from aggregates; the rows themselves are streamed and the walk stops
    # as soon as the budget is spent, so a large mind is never read in full.
    limit = budget * CHARS_PER_TOKEN
    counts = selection.counts()
    total = sum(counts.values())
    verified = sum(n for (is_verified, _), n in counts.items() if is_verified)
    pending = {p.value: counts[(False, p.value)] + counts[(True, p.value)] for p in Priority}
    header = _header(mind, total, verified)

    # Below the priority being walked nothing has been shown yet, so its closing lines are
    # fixed: computed once per priority.
    lower_cache: dict[int, tuple[list[Omitted], int]] = {}

    def lower_omitted(priority: int) -> tuple[list[Omitted], int]:
        """Closing lines for every priority below `priority` (all of it left out), and
        their length without the blank line before them."""
        if priority not in lower_cache:
            lines = [
                Omitted(lower, pending[lower], selection.first_keys(lower))
                for lower in NON_CRITICAL_DESC
                if lower < priority and pending[lower] > 0
            ]
            lower_cache[priority] = (lines, sum(len(o.line) + 1 for o in lines))
        return lower_cache[priority]

    stream = _Lookahead(selection.rows(for_json=for_json, whole=False))
    used = len(header)
    entries: list[str] = []
    kept: list[Row] = []
    omitted: list[Omitted] = []
    for row in stream:
        priority = row.priority
        entry = _entry(len(entries) + 1, row)
        cost = len(entry) + 2  # a blank line before it and its own final newline
        if priority != Priority.CRITICAL:
            # Would the answer still fit if this were the last memory shown?
            lower, closing = lower_omitted(priority)
            left = pending[priority] - 1
            if left > 0:
                ahead = stream.keys_ahead(priority, MAX_KEYS_NAMED)
                closing += len(Omitted(priority, left, ahead).line) + 1
            if closing:
                closing += 1  # the blank line before the closing lines
            if used + cost + closing > limit:
                head = (row.key, *stream.keys_ahead(priority, MAX_KEYS_NAMED - 1))
                omitted = [Omitted(priority, max(pending[priority], 1), head), *lower]
                break
        entries.append(entry)
        kept.append(row)
        used += cost
        pending[priority] -= 1

    return RecallPlan(
        total=total,
        verified=verified,
        header=header,
        entries=entries,
        kept=kept,
        omitted=_fewer_keys(omitted, used=used, limit=limit),
    )


def _fewer_keys(omitted: list[Omitted], *, used: int, limit: int | None) -> list[Omitted]:
    """A tiny budget (or a safety net): the closing lines naming fewer keys, the last line's
    first (the lowest priority's), when that makes the answer fit. When what is shown alone
    overflows the budget, the keys stay."""
    if limit is None:
        return omitted
    omitted = list(omitted)
    bare = [dataclasses.replace(o, keys=()) for o in omitted]
    while omitted and used + _closing_len(bare) <= limit < used + _closing_len(omitted):
        index = max((i for i, o in enumerate(omitted) if o.keys), default=None)
        if index is None:
            break
        shorter = omitted[index].keys[:-1]
        omitted[index] = dataclasses.replace(omitted[index], keys=shorter)
    return omitted


# --- About a topic ----------------------------------------------------------------------------


def _planned(selection: RecallSelection, *, budget: int | None, for_json: bool) -> RecallPlan:
    if selection.about is not None:
        # Its rows are few (the critical ones and ABOUT_DEPTH more): no transaction held
        # open around the search, which may wait on an embeddings API.
        return _about_plan(selection, budget=budget, for_json=for_json)
    assert budget is not None  # a whole recall without `about` is streamed instead
    with _streaming_reads():
        return _plan(selection, budget=budget, for_json=for_json)


def _about_plan(selection: RecallSelection, *, budget: int | None, for_json: bool) -> AboutPlan:
    """A recall about `selection.about`: every critical memory in recall order, then the
    other memories the search ranks most relevant to it (its first ABOUT_DEPTH, best first,
    equal scores by priority, then most recently updated), as many as the budget holds; the
    first that does not fit ends the list, as in _plan. What is left out: one closing line
    per priority for the relevant ones, then one for the rest of the selection (other
    topics), which is never shown."""
    assert selection.about is not None
    counts = selection.counts()
    total = sum(counts.values())
    verified = sum(n for (is_verified, _), n in counts.items() if is_verified)
    critical = counts[(False, Priority.CRITICAL)] + counts[(True, Priority.CRITICAL)]
    relevant, mode, warnings = _relevant(selection, for_json=for_json)
    header = _header(selection.mind, total, verified) + _about_lines(selection.about, warnings)

    other_count = max(total - critical - len(relevant), 0)
    other = []
    if other_count:
        rest = selection.memories().exclude(priority=Priority.CRITICAL)
        rest = rest.exclude(pk__in=[row.id for row in relevant])
        keys = tuple(rest.values_list("key", flat=True)[:MAX_KEYS_NAMED])
        other = [Omitted(None, other_count, keys)]

    def left_out(rows: list[Row]) -> list[Omitted]:
        """The closing lines when `rows` (relevant ones, best first) are left out."""
        by_priority: dict[int, list[str]] = {}
        for row in rows:
            by_priority.setdefault(row.priority, []).append(row.key)
        lines = [
            Omitted(p, len(by_priority[p]), tuple(by_priority[p][:MAX_KEYS_NAMED]))
            for p in NON_CRITICAL_DESC
            if p in by_priority
        ]
        return lines + other

    limit = None if budget is None else budget * CHARS_PER_TOKEN
    used = len(header)
    entries: list[str] = []
    kept: list[Row] = []
    critical_rows = selection.memories().filter(priority=Priority.CRITICAL)
    for row in recall_rows(selection, for_json=for_json, whole=False, memories=critical_rows):
        entry = _entry(len(entries) + 1, row)
        entries.append(entry)
        kept.append(row)
        used += len(entry) + 2
    omitted = left_out([])
    for index, row in enumerate(relevant):
        entry = _entry(len(entries) + 1, row)
        cost = len(entry) + 2
        # Would the answer still fit if this were the last memory shown?
        if (
            limit is not None
            and used + cost + _closing_len(left_out(relevant[index + 1 :])) > limit
        ):
            omitted = left_out(relevant[index:])
            break
        entries.append(entry)
        kept.append(row)
        used += cost

    return AboutPlan(
        total=total,
        verified=verified,
        header=header,
        entries=entries,
        kept=kept,
        omitted=_fewer_keys(omitted, used=used, limit=limit),
        mode=mode,
        warnings=warnings,
    )


def _relevant(selection: RecallSelection, *, for_json: bool) -> tuple[list[Row], str, list[str]]:
    """The selection's memories other than critical ones that the search for `about` finds
    among its first ABOUT_DEPTH, best first, equal scores by priority then most recently
    updated; and the search's mode and warnings (search by meaning unavailable: keywords
    alone)."""
    assert selection.about is not None
    page = memory_search_scored(
        mind=selection.mind,
        q=selection.about,
        filters=selection.search_filters(),
        limit=ABOUT_DEPTH,
        now=selection.now,
    )
    scores = dict(page.scored)
    found = selection.memories().filter(pk__in=list(scores)).exclude(priority=Priority.CRITICAL)
    rows = list(recall_rows(selection, for_json=for_json, whole=False, memories=found))
    # Last, the search's own order: what it could not tell apart either.
    place = {memory_id: index for index, (memory_id, _) in enumerate(page.scored)}
    rows.sort(key=lambda r: (-scores[r.id], -r.priority, -r.updated_at.timestamp(), place[r.id]))
    return rows, page.mode, list(page.warnings)
