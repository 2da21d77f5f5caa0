"""Reads of memories. Every function takes the mind (or the owner): scoping is an argument.

- `memory_list` is the one list: filters, sort, paging and the total (with a query, the
  keyword search of memories.search), for the API's lists, the dashboard's table and
  queues, and the MCP tools; `memory_matching_ids` is every memory it lists, on every page;
- the windows ("expiring soon", "stale") and the counts every face shows are defined here
  once (`count_conditions`); "live" and "expired" in models.py;
- related memories, tags, stats, health, the overview and incremental sync.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db import transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from core.errors import NotFound
from memories.embeddings import outbox
from memories.fields import CATEGORIES, PRIORITY_NAMES, SOURCES, iso
from memories.filters import DEFAULT_SORT, NO_FILTERS, MemoryFilters, order_by
from memories.models import (
    Memory,
    MemoryEvent,
    MemoryTag,
    Priority,
    expired_q,
    expiring_q,
    live_q,
)
from memories.rules import can_be_stored, quotas
from memories.search import SearchHit, memory_search, memory_search_ids
from memories.secrets import MARKER_START
from minds.access import Level, level_needed, level_on
from minds.models import Mind

EXPIRING_SOON = timedelta(days=7)
STALE_AFTER = timedelta(days=90)
IMPORTANT = (Priority.HIGH, Priority.CRITICAL)
ATTENTION_IDS = 5
NOT_FOUND = "No memory with this id in this mind."
# At most this many memories a list page (filters.MAX_OFFSET is how far in it may start).
LIST_LIMIT_MAX = 1000


def memory_get(*, mind: Mind, memory_id: str) -> Memory:
    """The memory `memory_id` of this mind; another mind's is NotFound like a missing one."""
    memory = None
    if can_be_stored(memory_id):
        memory = Memory.objects.filter(mind=mind, pk=memory_id).first()
    if memory is None:
        raise NotFound(NOT_FOUND)
    return memory


def memory_for_person(*, user: Any, memory_id: str, need: Level) -> Memory:
    """The memory `memory_id` in whichever mind `user` reaches, when they reach it at
    `need`: a call on one memory needs no mind named. NotFound when they cannot see it
    (missing and foreign alike), LevelTooLow when they see it at a lower level."""
    memory = None
    if can_be_stored(memory_id):
        memory = Memory.objects.select_related("mind").filter(pk=memory_id).first()
    if memory is None:
        raise NotFound(NOT_FOUND)
    person_reaches(user=user, mind=memory.mind, need=need)
    return memory


def person_reaches(*, user: Any, mind: Mind, need: Level, missing: str = NOT_FOUND) -> None:
    """`user` reaches a memory's `mind` at `need`: NotFound(`missing`) when they cannot see
    it (as if the memory were missing), LevelTooLow below `need`."""
    level = level_on(user=user, mind=mind)
    if level is None:
        raise NotFound(missing)
    level_needed(level, need)


def memory_get_by_key(*, mind: Mind, category: str, key: str) -> Memory:
    """The mind's memory (category, key), or NotFound."""
    memory = None
    if can_be_stored(key):
        memory = Memory.objects.filter(mind=mind, category=category, key=key).first()
    if memory is None:
        raise NotFound(f'No memory with category "{category}" and key "{key}" in this mind.')
    return memory


def memory_ids_present(*, mind: Mind, ids: set[str]) -> set[str]:
    """Which of `ids` are memories of this mind now (the rest were deleted, or are not its)."""
    return set(Memory.objects.filter(mind=mind, pk__in=ids).values_list("pk", flat=True))


# --- The one list ---------------------------------------------------------------------------


@dataclass
class MemoryPage:
    """One page of a list and how many match in all."""

    memories: list[Memory]
    total: int
    # With a query: each shown memory's score and snippet, in order.
    hits: list[SearchHit] | None = None


def memory_list(
    *,
    mind: Mind,
    filters: MemoryFilters = NO_FILTERS,
    q: str | None = None,
    sort: str | None = None,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> MemoryPage:
    """One page of the mind's memories narrowed by `filters`, and the total.

    Without `q`: in the order SORTS[sort] names (most recently updated first by default).
    With `q`: only full-text matches, each with its score and snippet, best first unless
    `sort` names another order; Invalid (field `q`) when `q` holds nothing searchable.
    """
    now = now or timezone.now()
    if q is not None:
        found = memory_search(
            mind=mind,
            q=q,
            filters=filters,
            mode="keyword",
            sort=sort,
            limit=limit,
            offset=offset,
            now=now,
        )
        return MemoryPage([hit.memory for hit in found.hits], found.total, found.hits)
    if filters.impossible:
        return MemoryPage([], 0)
    memories = filters.apply(Memory.objects.filter(mind=mind), now=now)
    total = memories.count()
    if not total:
        return MemoryPage([], 0)
    ordering = order_by(sort or DEFAULT_SORT)
    # The page's ids are picked in a subquery, which the order's index can answer alone;
    # only the page's rows are read whole, not every row skipped on the way to a deep page.
    chosen = memories.order_by(*ordering).values("pk")[offset : offset + limit]
    page = Memory.objects.filter(pk__in=chosen).order_by(*ordering)
    return MemoryPage(list(page), total)


def memory_matching_ids(
    *,
    mind: Mind,
    filters: MemoryFilters = NO_FILTERS,
    q: str | None = None,
    now: datetime | None = None,
) -> list[str]:
    """The ids of every memory memory_list(filters) lists, or memory_search(q, filters)
    finds, on every page at once: what an action on "all matching" acts on. Invalid (field
    `q`) as memory_search."""
    now = now or timezone.now()
    if filters.impossible:
        return []
    if q is None:
        memories = filters.apply(Memory.objects.filter(mind=mind), now=now)
        return list(memories.values_list("pk", flat=True))
    return memory_search_ids(mind=mind, q=q, filters=filters, now=now)


def memory_unverified_matching_ids(
    *,
    mind: Mind,
    filters: MemoryFilters = NO_FILTERS,
    q: str | None = None,
    now: datetime | None = None,
) -> list[str]:
    """memory_matching_ids, only the unverified ones: what "verify all matching" verifies."""
    if filters.verified:  # a list of verified memories only
        return []
    unverified = replace(filters, verified=False)
    return memory_matching_ids(mind=mind, filters=unverified, q=q, now=now)


def expiring_filters(*, within: timedelta, include_expired: bool = False) -> MemoryFilters:
    """Memories whose expiry falls in (now, now + within]; with `include_expired`, also
    those already expired (they sort first: `expires`)."""
    return MemoryFilters(expired="include" if include_expired else "hide", expiring_within=within)


# --- Counts, in one place -----------------------------------------------------------------


def count_conditions(now: datetime, prefix: str = "") -> dict[str, Q]:
    """What each count counts. `prefix` reaches the memories through a relation."""
    current = Q(**{f"{prefix}superseded_by__isnull": True})
    live = live_q(now, prefix) & current
    verified = Q(**{f"{prefix}verified": True})
    return {
        "live": live,
        "expired": expired_q(now, prefix),
        "superseded": live_q(now, prefix) & ~current,
        "verified": live & verified,
        "unverified": live & ~verified,
        "unverified_important": live & ~verified & Q(**{f"{prefix}priority__in": IMPORTANT}),
        "expiring_soon": expiring_q(now, EXPIRING_SOON, prefix),
        "stale": live & Q(**{f"{prefix}updated_at__lt": now - STALE_AFTER}),
    }


def counts_of(memories: Iterable[Memory], *, now: datetime) -> dict[str, int]:
    """memory_counts of memories that are no rows (a mind as of a moment): the same names,
    each judged by count_conditions' rule in Python (tests hold the two renderings
    together)."""
    counts = dict.fromkeys(("total", *count_conditions(now)), 0)
    for memory in memories:
        counts["total"] += 1
        for name in _conditions_met(memory, now):
            counts[name] += 1
    return counts


def _conditions_met(memory: Memory, now: datetime) -> Iterable[str]:
    """The names of count_conditions that `memory` meets at `now`."""
    expired = memory.is_expired(now)
    current = memory.superseded_by_id is None
    live = not expired and current
    if expired:
        yield "expired"
    if not expired and not current:
        yield "superseded"
    if not expired and memory.expires_at is not None and memory.expires_at <= now + EXPIRING_SOON:
        yield "expiring_soon"
    if not live:
        return
    yield "live"
    yield "verified" if memory.verified else "unverified"
    if not memory.verified and memory.priority in IMPORTANT:
        yield "unverified_important"
    if memory.updated_at < now - STALE_AFTER:
        yield "stale"


def stale_memories(*, mind: Mind, limit: int = 50, now: datetime | None = None) -> MemoryPage:
    """The mind's stale memories (count_conditions' "stale": not updated in STALE_AFTER),
    those most in doubt first: never verified, then lowest confidence, then oldest."""
    now = now or timezone.now()
    stale = Memory.objects.filter(mind=mind).filter(count_conditions(now)["stale"])
    ordered = stale.order_by("verified", "confidence", "updated_at", "id")
    return MemoryPage(list(ordered[:limit]), stale.count())


def redacted_memories(*, mind: Mind, limit: int = 50) -> MemoryPage:
    """The mind's memories in which a credential was redacted (secrets.marker), most
    recently updated first: a person may want to put a safe note in its place."""
    marked = Memory.objects.filter(mind=mind, content__contains=MARKER_START)
    return MemoryPage(list(marked.order_by("-updated_at", "-id")[:limit]), marked.count())


def memory_counts(*, mind: Mind, now: datetime | None = None) -> dict[str, int]:
    """The mind's counts: total, then each of `count_conditions`, in one query."""
    conditions = count_conditions(now or timezone.now())
    # Aliased apart from the field names (an aggregate may not be called "verified").
    counted = Memory.objects.filter(mind=mind).aggregate(
        n_total=Count("pk"),
        **{f"n_{name}": Count("pk", filter=condition) for name, condition in conditions.items()},
    )
    return {name.removeprefix("n_"): n for name, n in counted.items()}


def minds_with_counts(
    *, owner: Any = None, minds: QuerySet[Mind] | None = None, now: datetime | None = None
) -> QuerySet[Mind]:
    """The owner's minds (or `minds`, e.g. those shared with a person), oldest first, each
    with `total` and the attributes of `count_conditions`."""
    conditions = count_conditions(now or timezone.now(), prefix="memories__")
    return (
        (Mind.objects.owned_by(owner) if minds is None else minds)
        .annotate(
            total=Count("memories"),
            **{name: Count("memories", filter=condition) for name, condition in conditions.items()},
        )
        .order_by("created_at")
    )


# --- Review and overview ------------------------------------------------------------------


def memory_related(
    *,
    mind: Mind,
    memory: Memory,
    include_expired: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> MemoryPage:
    """Other memories of the mind sharing at least one tag with `memory`: most shared tags
    first, then most recently updated. Each carries `.shared` (how many tags it shares).

    Candidates are ranked as (id, shared count) pairs, the count an index-only subquery,
    and only the page's rows are read whole: grouping whole rows would sort every
    candidate's content.
    """
    if not memory.tags:
        return MemoryPage([], 0)
    sharing = MemoryTag.objects.filter(mind=mind, tag__in=memory.tags)
    shared = (
        sharing.filter(memory_id=OuterRef("pk"))
        .values("memory_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    filters = MemoryFilters(expired="include" if include_expired else "hide")
    candidates = filters.apply(Memory.objects.filter(mind=mind), now=now or timezone.now())
    candidates = candidates.filter(pk__in=sharing.values("memory_id")).exclude(pk=memory.pk)
    ranked = candidates.annotate(shared=Subquery(shared)).order_by("-shared", "-updated_at", "id")
    # Every candidate's (id, shared) at once: the total comes with it, each row read once.
    everyone = list(ranked.values_list("id", "shared"))
    ids = everyone[offset : offset + limit]
    rows = Memory.objects.in_bulk([pk for pk, _ in ids])
    page = []
    for pk, count in ids:
        rows[pk].shared = count  # type: ignore[attr-defined]
        page.append(rows[pk])
    return MemoryPage(page, len(everyone))


def tag_counts(
    *, mind: Mind, include_expired: bool = False, limit: int = 1000, now: datetime | None = None
) -> tuple[list[dict[str, Any]], int, int]:
    """(`[{"tag", "count"}]` most used first then by name, distinct tags, memories counted).

    Three queries, none reading the memories themselves: every tag row of the mind counted
    from the (mind, tag) index, minus the tag rows of expired memories (found through the
    expiry index; usually few), and the memories counted.
    """
    now = now or timezone.now()
    ranked = _tags_ranked(mind=mind, include_expired=include_expired, now=now)
    tags = [{"tag": tag, "count": n} for n, tag in ranked[:limit]]
    memories = Memory.objects.filter(mind=mind)
    if not include_expired:
        memories = memories.live(now)
    return tags, len(ranked), memories.count()


def tags_most_used(*, mind: Mind, limit: int, now: datetime | None = None) -> list[dict[str, Any]]:
    """The first `limit` of `tag_counts`'s list (live memories), without its totals."""
    ranked = _tags_ranked(mind=mind, include_expired=False, now=now or timezone.now())
    return [{"tag": tag, "count": n} for n, tag in ranked[:limit]]


def _tags_ranked(*, mind: Mind, include_expired: bool, now: datetime) -> list[tuple[int, str]]:
    """(count, tag) of every tag in use, most used first then by name."""
    rows = MemoryTag.objects.filter(mind=mind)
    counts = dict(rows.values("tag").annotate(n=Count("id")).values_list("tag", "n"))
    if not include_expired:
        # Driven by the mind's expired memories (a join from the tag rows would visit every
        # memory of the mind); the subquery is scoped to the mind, so no mind filter here.
        gone = Memory.objects.filter(mind=mind).expired(now).values("id")
        expired = MemoryTag.objects.filter(memory_id__in=gone).values("tag").annotate(n=Count("id"))
        for tag, n in expired.values_list("tag", "n"):
            counts[tag] -= n
    return sorted(((n, tag) for tag, n in counts.items() if n > 0), key=lambda p: (-p[0], p[1]))


def tags_unused(*, mind: Mind, tags: Iterable[str]) -> list[str]:
    """Which of `tags` (normalised) no memory of the mind has, in their order."""
    tags = list(tags)
    used = set(
        MemoryTag.objects.filter(mind=mind, tag__in=tags).values_list("tag", flat=True).distinct()
    )
    return [tag for tag in tags if tag not in used]


def mind_usage(*, mind: Mind) -> dict[str, int]:
    """What the mind holds against its quotas, from the counters its writes keep (as `mind`
    was read): memories, bytes of content, bytes of earlier values in its audit trail
    (`history_bytes`, kept within `max_history_bytes` by folding the oldest), each beside
    its limit (0: none)."""
    limits = quotas()
    return {
        "memories": mind.stored_memories,
        "max_memories": limits["memories"],
        "bytes": mind.stored_bytes,
        "max_bytes": limits["bytes"],
        "history_bytes": mind.history_bytes,
        "max_history_bytes": limits["history"],
    }


def memory_stats(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """Totals of every memory of the mind (expired ones included, and counted apart) by
    category, priority, source and verification: one GROUP BY query plus one for tags;
    `embedded` (memories with a vector of the current model), `pending_embedding` (queued
    for one) and `parked_embedding` (refused by the embedder again and again: taken by no
    batch until the memory changes or an operator retries), one query each; `usage`
    (mind_usage) from the mind row."""
    now = now or timezone.now()
    is_expired = Case(
        When(expired_q(now), then=Value(True)), default=Value(False), output_field=BooleanField()
    )
    groups = (
        Memory.objects.filter(mind=mind)
        .annotate(was_expired=is_expired)
        .values_list("category", "priority", "source", "verified", "was_expired")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_category = dict.fromkeys(CATEGORIES, 0)
    by_priority = {PRIORITY_NAMES[p]: 0 for p in sorted(PRIORITY_NAMES, reverse=True)}
    by_source = dict.fromkeys(SOURCES, 0)
    total = verified = expired = 0
    for category, priority, source, is_verified, was_expired, n in groups:
        total += n
        by_category[category] += n
        by_priority[PRIORITY_NAMES[priority]] += n
        by_source[source] += n
        verified += n if is_verified else 0
        expired += n if was_expired else 0
    return {
        "total": total,
        "live": total - expired,
        "expired": expired,
        "verified": verified,
        "unverified": total - verified,
        "by_category": by_category,
        "by_priority": by_priority,
        "by_source": by_source,
        "tags": MemoryTag.objects.filter(mind=mind).values("tag").distinct().count(),
        **outbox.embedding_counts(mind_id=mind.pk),
        "usage": mind_usage(mind=mind),
    }


def mind_health(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """How the mind is doing, for an agent or a person deciding what to look at.

    Counts are of live (not expired) memories unless named otherwise; `attention` lists
    what a person should review, each with up to five ids. One aggregate query, plus one
    per attention item that has something in it.
    """
    now = now or timezone.now()
    conditions = count_conditions(now)
    counts = memory_counts(mind=mind, now=now)
    share = counts["unverified"] / counts["live"] if counts["live"] else 0.0
    days = EXPIRING_SOON.days
    checks = [
        (
            "unverified_important",
            ("-priority", "confidence", "-updated_at"),
            "high or critical memories an agent stored that no person has verified",
        ),
        (
            "expiring_soon",
            ("expires_at",),
            f"memories expiring within {days} days: extend or let go",
        ),
        (
            "stale",
            ("updated_at",),
            f"memories not updated in {STALE_AFTER.days} days: still true?",
        ),
        ("expired", ("expires_at",), "expired memories kept in the database"),
    ]
    attention = []
    for name, order, why in checks:
        count = counts[name]
        if count:
            ids = Memory.objects.filter(mind=mind).filter(conditions[name]).order_by(*order, "id")
            attention.append(
                {
                    "kind": name,
                    "count": count,
                    "detail": f"{count} {why}.",
                    "ids": list(ids.values_list("id", flat=True)[:ATTENTION_IDS]),
                }
            )
    return {
        "status": "attention" if attention else "ok",
        "checked_at": iso(now),
        **counts,
        "unverified_share": round(share, 4),
        "attention": attention,
    }


@dataclass
class Overview:
    """The dashboard's overview of a mind: live memories by category, priority and
    verification, created/updated writes per day (UTC), and memories waiting for a vector
    (`pending_embedding`) or parked after the embedder refused them (`parked_embedding`)."""

    counts: dict[str, int]
    by_category: list[tuple[str, int]]
    by_priority: list[tuple[str, int]]
    writes: list[tuple[date, int, int]] = field(default_factory=list)  # day, created, updated
    embedding: dict[str, int] = field(default_factory=dict)

    @property
    def verified_share(self) -> float:
        live = self.counts["live"]
        return self.counts["verified"] / live if live else 0.0


def memory_overview(*, mind: Mind, days: int = 30, now: datetime | None = None) -> Overview:
    """Counts for the overview, and the writes of the last `days` days."""
    now = now or timezone.now()
    live = Memory.objects.filter(mind=mind).live(now)
    categories = dict(live.values_list("category").annotate(n=Count("pk")).order_by())
    priorities = dict(live.values_list("priority").annotate(n=Count("pk")).order_by())

    first_day = (now.astimezone(UTC) - timedelta(days=days - 1)).date()
    rows = (
        MemoryEvent.objects.filter(
            mind=mind,
            action__in=[MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE],
            # A plain range (not `at__date`) so the (mind, at) index answers it.
            at__gte=datetime.combine(first_day, time.min, tzinfo=UTC),
        )
        .annotate(day=TruncDate("at", tzinfo=UTC))
        .values_list("day", "action")
        .annotate(n=Count("pk"))
        .order_by()
    )
    per_day: dict[date, dict[str, int]] = {}
    for day, action, n in rows:
        per_day.setdefault(day, {})[action] = n
    writes = []
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        counts = per_day.get(day, {})
        writes.append((day, counts.get("create", 0), counts.get("update", 0)))
    return Overview(
        counts=memory_counts(mind=mind, now=now),
        by_category=_by_category(categories),
        by_priority=_by_priority(priorities),
        writes=writes,
        # Counted without loading the model: the page needs no vector.
        embedding=outbox.job_counts(mind_id=mind.pk),
    )


def overview_of(memories: Iterable[Memory], *, now: datetime) -> Overview:
    """memory_overview's counts of memories that are no rows (a mind as of a moment, `now`
    being that moment), by the same rules: no writes, no embedding counts."""
    memories = list(memories)
    not_expired = [m for m in memories if not m.is_expired(now)]
    return Overview(
        counts=counts_of(memories, now=now),
        by_category=_by_category(Counter(m.category for m in not_expired)),
        by_priority=_by_priority(Counter(m.priority for m in not_expired)),
    )


def _by_category(counted: dict[str, int]) -> list[tuple[str, int]]:
    """The overview's memories by category: every category, in their declared order."""
    return [(c, counted.get(c, 0)) for c in CATEGORIES]


def _by_priority(counted: dict[int, int]) -> list[tuple[str, int]]:
    """The overview's memories by priority: every priority by name, the highest first."""
    return [(PRIORITY_NAMES[p], counted.get(p, 0)) for p in sorted(PRIORITY_NAMES, reverse=True)]


# --- Incremental sync -----------------------------------------------------------------------


# At most this many changes (memories and deleted ids together) a diff page lists, unless
# one instant's writes carry it past (a page never splits the writes of one instant).
DIFF_PAGE_MAX = 1000


@dataclass
class Diff:
    """One page of changes; the lists are queries, read as they are iterated."""

    since: datetime
    until: datetime
    # True when the window had more than this page: ask again with since = until.
    has_more: bool
    created: QuerySet[Memory]
    updated: QuerySet[Memory]
    deleted: QuerySet[MemoryEvent, str]


# The events that say a memory is gone: a delete, or a purge (which deletes it too).
GONE_ACTIONS = (MemoryEvent.Action.DELETE, MemoryEvent.Action.PURGE)


def memory_diff(
    *, mind: Mind, since: datetime, until: datetime, limit: int = DIFF_PAGE_MAX
) -> Diff:
    """What changed in the window since <= t < until, for incremental sync, a page at a time.

    - created: memories created in the window (as they are now);
    - updated: memories updated in the window but created before it;
    - deleted: ids whose delete tombstone falls in the window, oldest first. A memory created
      and deleted in the window is only here (its row is gone); one deleted and stored again
      under the same key has a new id, so it is deleted (old id) and created (new id). One
      whose delete was undone (memory_undo) is back under its own id: it is not in deleted,
      and is in updated (or created) as it is now, so a client applies every list as an
      upsert by id, whichever list named the id before.

    The bounds are half-open so that the next call with `since = until` neither repeats nor
    misses a write. `until` must come from `diff_until()` (see there).

    Paging: a window of more than `limit` changes is answered a page at a time. A page holds
    the window's first `limit` changes and every other change of the last one's instant;
    its `until` is the instant of the first change it leaves out, and `has_more` is true.
    The next page is the next call with `since` = this `until`: the rule that makes
    successive diffs add up, so a client that knows nothing of paging still misses nothing.
    A memory created in an earlier page's window and changed again since is listed under
    updated, in the page of its latest change.
    """
    changed = Memory.objects.filter(mind=mind, updated_at__gte=since, updated_at__lt=until)
    gone = MemoryEvent.objects.filter(
        mind=mind, action__in=GONE_ACTIONS, at__gte=since, at__lt=until
    )
    end = _page_end(changed, gone, limit)
    has_more = end is not None
    if end is not None:
        changed = changed.filter(updated_at__lt=end)
        gone = gone.filter(at__lt=end)
        until = end
    # A memory's created_at never follows its updated_at, so "created in the window" rows
    # are among those updated in it.
    in_order = changed.order_by("updated_at", "id")
    return Diff(
        since=since,
        until=until,
        has_more=has_more,
        created=in_order.filter(created_at__gte=since),
        updated=in_order.filter(created_at__lt=since),
        # A memory whose delete was undone is back under its id: not deleted, but listed
        # with the created or updated as it is now.
        deleted=gone.exclude(Exists(Memory.objects.filter(pk=OuterRef("memory_id"))))
        .order_by("at", "id")
        .values_list("memory_id", flat=True),
    )


def _page_end(
    changed: QuerySet[Memory], gone: QuerySet[MemoryEvent], limit: int
) -> datetime | None:
    """Where a page of at most `limit` changes (plus the rest of its last instant) ends: the
    first instant after it that holds a change. None when the whole window fits."""
    stamps = changed.order_by().values_list("updated_at", flat=True)
    moments = gone.order_by().values_list("at", flat=True)
    # The limit-th change of the window: one query over both kinds of change.
    everything = stamps.union(moments, all=True).order_by("updated_at")
    last = everything[limit - 1 : limit]
    if not last:
        return None
    later = stamps.filter(updated_at__gt=last[0]).union(moments.filter(at__gt=last[0]), all=True)
    return later.order_by("updated_at").first()


def diff_until(*, mind: Mind) -> datetime:
    """The upper bound of a diff answered now: every write of the mind stamped before it has
    committed. Writes are stamped under the mind's write lock (services), so reading the
    clock after taking that lock for an instant orders us after every write stamped
    earlier and before every write stamped later."""
    with transaction.atomic():
        Mind.objects.lock(mind.pk)
        return timezone.now()
