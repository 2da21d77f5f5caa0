"""What a list of memories (or a search) may be narrowed and ordered by, and how far it pages.

One definition, rendered side by side: as an ORM filter for the lists, as SQL over the
alias `m` for the full-text backends, so a search narrowed by any filter finds exactly what
the list would (tests/memories/test_filters.py holds them together), and in Python for
memories that are no rows (a mind as of a moment, memories/as_of.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, TypeVar

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Exists, F, OuterRef, QuerySet
from django.db.models.expressions import OrderBy

from memories.models import Memory, MemoryTag, expired_q, live_q
from memories.rules import can_be_stored

Expired = Literal["hide", "include", "only"]
# A queryset of memories, kept as its own class (MemoryQuerySet) through the filters.
_Memories = TypeVar("_Memories", bound="QuerySet[Memory]")

# Orderings by name: each ends in the id, so pages never overlap. A nullable column sorts
# its nulls last on every database.
SORTS: dict[str, tuple[str, ...]] = {
    "-updated": ("-updated_at", "-id"),
    "updated": ("updated_at", "id"),
    "-created": ("-created_at", "-id"),
    "-priority": ("-priority", "-updated_at", "-id"),
    "confidence": ("confidence", "-priority", "-id"),
    "key": ("key", "id"),
    "category": ("category", "key", "id"),
    "expires": ("expires_at", "-priority", "id"),
    # The review queue: what a wrong answer would cost most, and is likeliest wrong, first.
    "review": ("-priority", "confidence", "-updated_at", "id"),
}
DEFAULT_SORT = "-updated"
NULLABLE = frozenset({"expires_at"})
# How far a list or a search pages: at most this far in (far beyond any mind, and well inside
# SQLite's 64-bit integers: a larger OFFSET is an error).
MAX_OFFSET = 10**12


class Matched(Protocol):
    """What MemoryFilters.matches reads of a memory: a Memory, or a memory rebuilt as of a
    moment that is none (memories/as_of.py)."""

    @property
    def category(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def source(self) -> str: ...
    @property
    def verified(self) -> bool: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def superseded_by_id(self) -> Any: ...
    @property
    def tags(self) -> Any: ...

    def is_expired(self, now: datetime | None = None) -> bool: ...


@dataclass(frozen=True)
class MemoryFilters:
    """Conditions that combine with AND; None (or "hide") leaves a condition out.

    `tag` and `tags` must already be normalised: a memory must have `tag` and every one of
    `tags` (the dashboard filters by several; the API and MCP by one). `expired`: "hide"
    (the default: live memories only), "include" or "only". `expiring_within`: only
    memories with an expiry up to that far from now. `superseded`: whether memories another
    one replaced are listed too (they are left out by default).
    """

    category: str | None = None
    tag: str | None = None
    tags: tuple[str, ...] = ()
    priority: int | None = None
    source: str | None = None
    verified: bool | None = None
    expired: Expired = "hide"
    expiring_within: timedelta | None = None
    superseded: bool = False

    @property
    def impossible(self) -> bool:
        """True when no memory can match: a tag with a NUL, which no tag holds."""
        return not all(can_be_stored(tag) for tag in self.all_tags)

    @property
    def all_tags(self) -> tuple[str, ...]:
        """Every tag a memory must have: `tag`, then `tags`, each once."""
        return tuple(dict.fromkeys((self.tag, *self.tags) if self.tag else self.tags))

    def apply(self, memories: _Memories, *, now: datetime) -> _Memories:
        """`memories` narrowed by these filters (the ORM rendering)."""
        if self.expired == "hide":
            memories = memories.filter(live_q(now))
        elif self.expired == "only":
            memories = memories.filter(expired_q(now))
        if self.expiring_within is not None:
            memories = memories.filter(expires_at__lte=now + self.expiring_within)
        if not self.superseded:
            memories = memories.filter(superseded_by__isnull=True)
        if self.category is not None:
            memories = memories.filter(category=self.category)
        if self.priority is not None:
            memories = memories.filter(priority=self.priority)
        if self.source is not None:
            memories = memories.filter(source=self.source)
        if self.verified is not None:
            # `IN`: an equality the (mind, verified, …) index answers on SQLite, where the
            # ORM writes `verified=False` as `NOT verified`, which no index answers.
            memories = memories.filter(verified__in=[self.verified])
        for tag in self.all_tags:
            tagged = MemoryTag.objects.filter(memory_id=OuterRef("pk"), tag=tag)
            memories = memories.filter(Exists(tagged))
        return memories

    def sql(self, *, now: datetime, db: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
        """The same conditions as SQL over `m` (`AND …` each), with their parameters."""
        at = db.ops.adapt_datetimefield_value(now)
        parts: list[str] = []
        params: list[Any] = []
        if self.expired == "hide":
            parts.append("AND (m.expires_at IS NULL OR m.expires_at > %s)")
            params.append(at)
        elif self.expired == "only":
            parts.append("AND m.expires_at <= %s")
            params.append(at)
        if self.expiring_within is not None:
            parts.append("AND m.expires_at <= %s")
            params.append(db.ops.adapt_datetimefield_value(now + self.expiring_within))
        if not self.superseded:
            parts.append("AND m.superseded_by_id IS NULL")
        for column in ("category", "priority", "source", "verified"):
            value = getattr(self, column)
            if value is not None:
                parts.append(f"AND m.{column} = %s")
                params.append(value)
        for tag in self.all_tags:
            parts.append(
                f"AND EXISTS (SELECT 1 FROM {MemoryTag._meta.db_table} AS t "
                "WHERE t.memory_id = m.id AND t.tag = %s)"
            )
            params.append(tag)
        return " ".join(parts), params

    def matches(self, memory: Matched, *, now: datetime) -> bool:
        """Whether `memory` passes these filters (the Python rendering, for memories that
        are not rows)."""
        expired = memory.is_expired(now)
        if (self.expired == "hide" and expired) or (self.expired == "only" and not expired):
            return False
        if self.expiring_within is not None and (
            memory.expires_at is None or memory.expires_at > now + self.expiring_within
        ):
            return False
        if not self.superseded and memory.superseded_by_id is not None:
            return False
        for column in ("category", "priority", "source", "verified"):
            value = getattr(self, column)
            if value is not None and getattr(memory, column) != value:
                return False
        return all(tag in memory.tags for tag in self.all_tags)


NO_FILTERS = MemoryFilters()  # live, current memories, nothing else narrowed


def order_by(sort: str) -> list[str | OrderBy]:
    """SORTS[sort] as ORM ordering (nulls last only where a column can hold them, so the
    other orderings still match their indexes)."""
    ordering: list[str | OrderBy] = []
    for name in SORTS[sort]:
        column = name.lstrip("-")
        if column not in NULLABLE:
            ordering.append(name)
        elif name.startswith("-"):
            ordering.append(F(column).desc(nulls_last=True))
        else:
            ordering.append(F(column).asc(nulls_last=True))
    return ordering


def sorted_memories(memories: Iterable[Memory], sort: str) -> list[Memory]:
    """`memories` in the order SORTS[sort] names (the Python rendering; text compares by
    code point, as SQLite's default collation does)."""
    ordered = list(memories)
    # One stable pass per column, the last first, leaves them ordered by every column.
    for name in reversed(SORTS[sort]):
        column, descending = name.lstrip("-"), name.startswith("-")
        ordered.sort(key=_sort_key(column, descending), reverse=descending)
    return ordered


def _sort_key(column: str, descending: bool) -> Any:
    def key(memory: Memory) -> Any:
        value = getattr(memory, column)
        if column not in NULLABLE:
            return value
        # Nulls last whichever way the pass runs (a reversed pass puts True first).
        return ((value is not None) == descending, value if value is not None else 0)

    return key


def order_sql(sort: str) -> str:
    """SORTS[sort] as SQL over `m`."""
    terms = []
    for name in SORTS[sort]:
        column = name.lstrip("-")
        if column in NULLABLE:
            terms.append(f"m.{column} IS NULL")
        terms.append(f"m.{column} {'DESC' if name.startswith('-') else 'ASC'}")
    return ", ".join(terms)
