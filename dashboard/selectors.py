"""Reads the dashboard needs beyond the API's selectors: counts, queues, charts, history.

Every function takes the owner or the mind: a person only ever sees their own minds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate
from django.http import Http404
from django.utils import timezone

from memories.models import Category, Memory, MemoryEvent, Priority
from minds.models import Mind

EXPIRING_WITHIN = timedelta(days=7)  # as GET /memory/expiring's default
# Fields a person can restore from an earlier version (the rest is verification bookkeeping).
RESTORABLE_FIELDS = ("category", "key", "content", "tags", "priority", "confidence", "expires_at")


def _live(now: datetime, prefix: str = "") -> Q:
    return Q(**{f"{prefix}expires_at__isnull": True}) | Q(**{f"{prefix}expires_at__gt": now})


def _expiring(now: datetime, prefix: str = "") -> Q:
    return Q(**{f"{prefix}expires_at__gt": now, f"{prefix}expires_at__lte": now + EXPIRING_WITHIN})


def mind_list_for_owner(*, owner, now: datetime | None = None) -> QuerySet[Mind]:
    """The owner's minds with `total`, `expired`, `unverified` (not expired), `expiring`."""
    now = now or timezone.now()
    return (
        Mind.objects.owned_by(owner)
        .annotate(
            total=Count("memories"),
            expired=Count("memories", filter=Q(memories__expires_at__lte=now)),
            unverified=Count(
                "memories", filter=Q(memories__verified=False) & _live(now, "memories__")
            ),
            expiring=Count("memories", filter=_expiring(now, "memories__")),
        )
        .order_by("created_at")
    )


def mind_get_for_owner(*, owner, mind_id: str) -> Mind:
    """The owner's mind `mind_id`; anyone else's is a 404 exactly like a missing one."""
    mind = Mind.objects.owned_by(owner).filter(pk=mind_id).first()
    if mind is None:
        raise Http404("No mind with this id is yours.")
    return mind


def memory_table(
    *,
    mind: Mind,
    category: str | None = None,
    priority: int | None = None,
    source: str | None = None,
    verified: bool | None = None,
    tag: str | None = None,
    expired: str = "",
    ordering: tuple[str, ...] = ("-updated_at", "-id"),
    now: datetime | None = None,
) -> QuerySet[Memory]:
    """The mind's memories for the table: the API list's filters plus "only expired"."""
    now = now or timezone.now()
    memories = Memory.objects.filter(mind=mind)
    if expired == "only":
        memories = memories.expired(now)
    elif expired != "include":
        memories = memories.live(now)
    if category:
        memories = memories.filter(category=category)
    if priority is not None:
        memories = memories.filter(priority=priority)
    if source:
        memories = memories.filter(source=source)
    if verified is not None:
        memories = memories.filter(verified=verified)
    if tag:
        memories = memories.filter(tag_rows__tag=tag)
    return memories.order_by(*ordering)


class SelectorPages:
    """A paged selector (`limit`/`offset` in, `(rows, total)` out) as a sequence that
    Django's Paginator can page through: it asks only for the page it shows."""

    def __init__(self, selector: Callable[..., tuple[list, int]], **arguments: Any) -> None:
        self.selector = selector
        self.arguments = arguments
        self._total: int | None = None

    def __len__(self) -> int:
        if self._total is None:
            _, self._total = self.selector(**self.arguments, limit=1, offset=0)
        return self._total

    def __getitem__(self, window: slice) -> list:
        start = window.start or 0
        rows, self._total = self.selector(
            **self.arguments, limit=max(window.stop - start, 1), offset=start
        )
        return rows


@dataclass
class MindStats:
    total: int
    live: int
    verified: int
    unverified: int
    expired: int
    expiring: int
    by_category: list[tuple[str, int]]
    by_priority: list[tuple[str, int]]
    writes: list[tuple[date, int, int]] = field(default_factory=list)  # day, created, updated

    @property
    def verified_share(self) -> float:
        return self.verified / self.live if self.live else 0.0


def mind_stats(*, mind: Mind, days: int = 30, now: datetime | None = None) -> MindStats:
    """Counts for the overview: not-expired memories by category, priority and verification,
    and created/updated writes per day (UTC) over the last `days` days."""
    now = now or timezone.now()
    memories = Memory.objects.filter(mind=mind)
    totals = memories.aggregate(
        total=Count("pk"),
        live=Count("pk", filter=_live(now)),
        verified=Count("pk", filter=_live(now) & Q(verified=True)),
        expiring=Count("pk", filter=_expiring(now)),
    )
    live = memories.live(now)
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

    return MindStats(
        total=totals["total"],
        live=totals["live"],
        verified=totals["verified"],
        unverified=totals["live"] - totals["verified"],
        expired=totals["total"] - totals["live"],
        expiring=totals["expiring"],
        by_category=[(c, categories.get(c, 0)) for c in Category.values],
        by_priority=[(p.label, priorities.get(p.value, 0)) for p in sorted(Priority, reverse=True)],
        writes=writes,
    )


@dataclass
class HistoryEntry:
    """One audit row, with the memory's restorable fields as they were right after it."""

    event: MemoryEvent
    version: dict[str, Any]
    # Fields that would change if this version were restored (empty: nothing to restore).
    restorable: dict[str, Any]

    @property
    def changes(self) -> list[tuple[str, Any, Any]]:
        return [(name, ch.get("old"), ch.get("new")) for name, ch in self.event.changes.items()]


def memory_history(*, memory: Memory, current: dict[str, Any]) -> list[HistoryEntry]:
    """The memory's audit rows, newest first, each with the version it left behind.

    `current` is the memory's present state in audit form (priority by name, timestamps as
    ISO strings). Walking back from it, undoing each row's changes, gives the state right
    after every earlier row: that is what "restore this version" puts back.
    """
    events = list(
        MemoryEvent.objects.filter(mind_id=memory.mind_id, memory_id=memory.pk).order_by(
            "-at", "-id"
        )
    )
    state = {name: current[name] for name in RESTORABLE_FIELDS}
    entries = []
    for event in events:
        version = dict(state)
        restorable = {name: value for name, value in version.items() if value != current[name]}
        entries.append(HistoryEntry(event=event, version=version, restorable=restorable))
        for name, change in event.changes.items():
            if name in state and isinstance(change, dict):
                state[name] = change.get("old")
    return entries


def memory_history_entry(*, memory: Memory, current: dict[str, Any], event_id: int) -> HistoryEntry:
    """The history entry of one audit row of this memory, or 404."""
    for entry in memory_history(memory=memory, current=current):
        if entry.event.pk == event_id:
            return entry
    raise Http404("No such version of this memory.")
