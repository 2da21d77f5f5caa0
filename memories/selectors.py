"""Reads of memories. Every function takes the mind: scoping is an argument, never optional."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.http import Http404
from django.utils import timezone

from memories.models import Category, Memory, MemoryEvent, MemoryTag, Priority, Source
from memories.serialization import iso
from minds.models import Mind


def can_be_stored(value: str | None) -> bool:
    """False for text no record can hold (a NUL character), so a lookup by it finds nothing.

    SQLite compares such text and finds no match; PostgreSQL refuses it outright (an error,
    a 500). Every selector answers "nothing found" for it, on both.
    """
    return value is None or "\x00" not in value


def memory_get(*, mind: Mind, memory_id: str) -> Memory:
    """The memory `memory_id` of this mind; another mind's memory is a 404 like a missing one."""
    if not can_be_stored(memory_id):
        raise Http404("No memory with this id in this mind.")
    memory = Memory.objects.filter(mind=mind, pk=memory_id).first()
    if memory is None:
        raise Http404("No memory with this id in this mind.")
    return memory


def memory_list(
    *,
    mind: Mind,
    category: str | None = None,
    tag: str | None = None,
    priority: int | None = None,
    source: str | None = None,
    verified: bool | None = None,
    include_expired: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> tuple[list[Memory], int]:
    """One page of the mind's memories, most recently updated first, and the total.

    Filters combine with AND; `tag` must already be normalised. Two queries, whatever the page
    size (tags are read from the record, not joined per row).
    """
    if not can_be_stored(tag):
        return [], 0
    memories = Memory.objects.filter(mind=mind)
    if not include_expired:
        memories = memories.live(now or timezone.now())
    if category is not None:
        memories = memories.filter(category=category)
    if tag is not None:
        # (memory, tag) is unique, so the join cannot repeat a memory.
        memories = memories.filter(tag_rows__tag=tag)
    if priority is not None:
        memories = memories.filter(priority=priority)
    if source is not None:
        memories = memories.filter(source=source)
    if verified is not None:
        memories = memories.filter(verified=verified)
    total = memories.count()
    page = list(memories.order_by("-updated_at", "-id")[offset : offset + limit]) if total else []
    return page, total


# --- Review and overview ------------------------------------------------------------------------

STALE_AFTER = timedelta(days=90)
EXPIRING_SOON = timedelta(days=7)
IMPORTANT = (Priority.HIGH, Priority.CRITICAL)
ATTENTION_IDS = 5


def _page(memories: QuerySet[Memory], *, limit: int, offset: int) -> tuple[list[Memory], int]:
    total = memories.count()
    return (list(memories[offset : offset + limit]) if total else []), total


def _scoped(mind: Mind, *, include_expired: bool, now: datetime) -> QuerySet[Memory]:
    memories = Memory.objects.filter(mind=mind)
    return memories if include_expired else memories.live(now)


def memory_expiring(
    *,
    mind: Mind,
    within: timedelta,
    include_expired: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> tuple[list[Memory], int]:
    """Memories whose expiry falls in (now, now + within], soonest first.

    With `include_expired` the already-expired ones come first (oldest expiry first), so one
    list shows everything that has run out or is about to.
    """
    now = now or timezone.now()
    memories = Memory.objects.filter(mind=mind, expires_at__lte=now + within)
    if not include_expired:
        memories = memories.filter(expires_at__gt=now)
    return _page(memories.order_by("expires_at", "id"), limit=limit, offset=offset)


def memory_unverified(
    *,
    mind: Mind,
    include_expired: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> tuple[list[Memory], int]:
    """The review queue: unverified memories, most important first, then least confident,
    then most recently updated (what a wrong answer would cost most, and is likeliest wrong)."""
    memories = _scoped(mind, include_expired=include_expired, now=now or timezone.now())
    memories = memories.filter(verified=False).order_by(
        "-priority", "confidence", "-updated_at", "id"
    )
    return _page(memories, limit=limit, offset=offset)


def memory_related(
    *,
    mind: Mind,
    memory: Memory,
    include_expired: bool = False,
    limit: int = 100,
    offset: int = 0,
    now: datetime | None = None,
) -> tuple[list[Memory], int]:
    """Other memories of the mind sharing at least one tag with `memory`: most shared tags
    first, then most recently updated. Each carries `.shared` (how many tags it shares).

    Candidates are ranked as (id, shared count) pairs, the count an index-only subquery,
    and only the page's rows are read whole: grouping whole rows would sort every
    candidate's content.
    """
    if not memory.tags:
        return [], 0
    sharing = MemoryTag.objects.filter(mind=mind, tag__in=memory.tags)
    shared = (
        sharing.filter(memory_id=OuterRef("pk"))
        .values("memory_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    candidates = (
        _scoped(mind, include_expired=include_expired, now=now or timezone.now())
        .filter(pk__in=sharing.values("memory_id"))
        .exclude(pk=memory.pk)
    )
    ranked = candidates.annotate(shared=Subquery(shared)).order_by("-shared", "-updated_at", "id")
    # Every candidate's (id, shared) at once: the total comes with it, each row read once.
    everyone = list(ranked.values_list("id", "shared"))
    ids = everyone[offset : offset + limit]
    rows = Memory.objects.in_bulk([pk for pk, _ in ids])
    page = []
    for pk, count in ids:
        rows[pk].shared = count
        page.append(rows[pk])
    return page, len(everyone)


def tag_counts(
    *, mind: Mind, include_expired: bool = False, limit: int = 1000, now: datetime | None = None
) -> tuple[list[dict[str, Any]], int, int]:
    """(`[{"tag", "count"}]` most used first then by name, distinct tags, memories counted).

    Three queries, none reading the memories themselves: every tag row of the mind counted
    from the (mind, tag) index, minus the tag rows of expired memories (found through the
    expiry index; usually few), and the live memories counted from the expiry index.
    """
    now = now or timezone.now()
    rows = MemoryTag.objects.filter(mind=mind)
    counts = dict(rows.values("tag").annotate(n=Count("id")).values_list("tag", "n"))
    if not include_expired:
        # Driven by the mind's expired memories (a join from the tag rows would visit every
        # memory of the mind); the subquery is scoped to the mind, so no mind filter here.
        gone = Memory.objects.filter(mind=mind).expired(now).values("id")
        expired = MemoryTag.objects.filter(memory_id__in=gone).values("tag").annotate(n=Count("id"))
        for tag, n in expired.values_list("tag", "n"):
            counts[tag] -= n
    ranked = sorted(((n, tag) for tag, n in counts.items() if n > 0), key=lambda p: (-p[0], p[1]))
    tags = [{"tag": tag, "count": n} for n, tag in ranked[:limit]]
    memories = _scoped(mind, include_expired=include_expired, now=now).count()
    return tags, len(ranked), memories


def memory_stats(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """Totals of every memory of the mind (expired ones included, and counted apart) by
    category, priority, source and verification: one GROUP BY query plus one for tags."""
    now = now or timezone.now()
    groups = (
        Memory.objects.filter(mind=mind)
        .annotate(
            is_expired=Case(
                When(expires_at__lte=now, then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        )
        .values_list("category", "priority", "source", "verified", "is_expired")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_category = dict.fromkeys(Category.values, 0)
    by_priority = {p.label: 0 for p in sorted(Priority, reverse=True)}
    by_source = dict.fromkeys(Source.values, 0)
    total = verified = expired = 0
    for category, priority, source, is_verified, is_expired, n in groups:
        total += n
        by_category[category] += n
        by_priority[Priority(priority).label] += n
        by_source[source] += n
        verified += n if is_verified else 0
        expired += n if is_expired else 0
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
    }


def mind_health(*, mind: Mind, now: datetime | None = None) -> dict[str, Any]:
    """How the mind is doing, for an agent or a person deciding what to look at.

    Counts are of live (not expired) memories unless named otherwise; `stale` means not
    updated in 90 days; `attention` lists what a person should review, each with up to five
    ids. One aggregate query, plus one per attention item that has something in it.
    """
    now = now or timezone.now()
    live = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    unverified_important = live & Q(verified=False, priority__in=IMPORTANT)
    expiring = Q(expires_at__gt=now, expires_at__lte=now + EXPIRING_SOON)
    stale = live & Q(updated_at__lt=now - STALE_AFTER)
    expired = Q(expires_at__lte=now)
    conditions = {
        "total": Q(),
        "live": live,
        "expired": expired,
        "verified": live & Q(verified=True),
        "unverified": live & Q(verified=False),
        "unverified_important": unverified_important,
        "expiring_soon": expiring,
        "stale": stale,
    }
    # Aliased apart from the field names (an aggregate may not be called "verified").
    aggregated = Memory.objects.filter(mind=mind).aggregate(
        **{f"n_{name}": Count("id", filter=condition) for name, condition in conditions.items()}
    )
    counts = {name: aggregated[f"n_{name}"] for name in conditions}
    share = counts["unverified"] / counts["live"] if counts["live"] else 0.0
    checks = [
        (
            "unverified_important",
            unverified_important,
            ("-priority", "confidence", "-updated_at"),
            "high or critical memories an agent stored that no person has verified",
        ),
        (
            "expiring_soon",
            expiring,
            ("expires_at",),
            "memories expiring within 7 days: extend or let go",
        ),
        ("stale", stale, ("updated_at",), "memories not updated in 90 days: still true?"),
        ("expired", expired, ("expires_at",), "expired memories kept in the database"),
    ]
    attention = []
    for name, condition, order, why in checks:
        count = counts[name]
        if count:
            ids = Memory.objects.filter(mind=mind).filter(condition).order_by(*order, "id")
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


# --- Audit and incremental sync -----------------------------------------------------------------


def memory_events(
    *,
    mind: Mind,
    action: str | None = None,
    memory_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[list[MemoryEvent], int]:
    """The audit trail of the mind, newest first, optionally for one action or memory."""
    if not can_be_stored(memory_id):
        return [], 0
    events = MemoryEvent.objects.filter(mind=mind)
    if action is not None:
        events = events.filter(action=action)
    if memory_id is not None:
        events = events.filter(memory_id=memory_id)
    events = events.order_by("-at", "-id")
    total = events.count()
    return (list(events[offset : offset + limit]) if total else []), total


@dataclass
class Diff:
    since: datetime
    until: datetime
    created: list[Memory]
    updated: list[Memory]
    deleted: list[str]


def memory_diff(*, mind: Mind, since: datetime, until: datetime) -> Diff:
    """What changed in the window since <= t < until, for incremental sync.

    - created: memories created in the window (as they are now);
    - updated: memories updated in the window but created before it;
    - deleted: ids whose delete tombstone falls in the window, oldest first. A memory created
      and deleted in the window is only here (its row is gone); one deleted and stored again
      under the same key has a new id, so it is deleted (old id) and created (new id).

    The bounds are half-open so that the next call with `since = until` neither repeats nor
    misses a write. `until` must come from `diff_until()` (see there).
    """
    window = Q(mind=mind)
    memories = Memory.objects.filter(window, updated_at__gte=since, updated_at__lt=until)
    created, updated = [], []
    for memory in memories.order_by("updated_at", "id").iterator(chunk_size=1000):
        if memory.created_at >= since:
            created.append(memory)
        else:
            updated.append(memory)
    # A memory's created_at never follows its updated_at, so "created in the window" rows are
    # among those updated in it: one query for both lists.
    deleted = (
        MemoryEvent.objects.filter(
            window, action=MemoryEvent.Action.DELETE, at__gte=since, at__lt=until
        )
        .order_by("at", "id")
        .values_list("memory_id", flat=True)
    )
    return Diff(since=since, until=until, created=created, updated=updated, deleted=list(deleted))


def diff_until() -> datetime:
    """The upper bound of a diff answered now: a write stamped before it is already committed.

    Writes take their timestamp inside their transaction; on SQLite every write transaction
    holds the database's write lock (BEGIN IMMEDIATE), so reading the clock while holding
    that lock for an instant orders us after every write stamped earlier and before every
    write stamped later. (On PostgreSQL writers are not serialised: a client that wants to
    be safe there can overlap its windows by a few seconds; re-applying a change is harmless.)
    """
    with transaction.atomic():
        return timezone.now()
