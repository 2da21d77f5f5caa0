"""Spans: what orders, narrows and counts each memory in a recall, over each span of time its
values held (MemorySpan), so that a recall as of a moment reads the mind then as today's
recall reads it now (API.md §9.10, memories/as_of.py).

Every audited write ends the memory's open span at its time and, unless it deleted or purged
the memory, opens the next one with the values it left (`record`, in the write's
transaction). A purge deletes the memory's spans; purging the history of its tags (a redacted
credential) blanks them in every span before their latest change (`tags_purged`): spans
keep no value the trail no longer holds. A mind's spans are built from its audit trail by
as_of.spans_from_trail (the migration that brought them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db.models import Max, QuerySet

from memories import rows
from memories.filters import MemoryFilters
from memories.models import Memory, MemoryEvent, MemorySpan, expired_q, live_q
from minds.models import Mind

Action = MemoryEvent.Action
# The writes after which the memory is held, with the values they left; each stamps its
# updated_at with its time (a delete and a purge do not: the memory is gone).
OPENING = frozenset(
    (
        Action.CREATE,
        Action.UPDATE,
        Action.VERIFY,
        Action.UNVERIFY,
        Action.SUPERSEDE,
        Action.UNDELETE,
    )
)
# The writes of a memory that has no open span: a new one, or one back from a delete.
BORN = frozenset((Action.CREATE, Action.UNDELETE))
# A memory's values a span keeps (model attributes), tags as JSON text.
SPANNED = (
    "category",
    "key",
    "priority",
    "verified",
    "expires_at",
    "superseded_by_id",
    "tags",
    "updated_at",
)


def tags_text(tags: list[str]) -> str:
    return json.dumps(tags)


def span_row(memory_id: str, mind_id: str, values: dict[str, Any], **times: Any) -> dict[str, Any]:
    """A span's row of a memory's `values` (SPANNED, by attribute), from `start` to `end`."""
    row = {name: values[name] for name in SPANNED}
    row.update(memory_id=memory_id, mind_id=mind_id, tags=tags_text(values["tags"]), **times)
    row["superseded_by"] = row.pop("superseded_by_id") or ""
    return row


def record(changes: Sequence[tuple[Memory | None, dict[str, Any]]]) -> None:
    """The spans of a write's audited changes ((the memory as it is now, None when purged; its
    audit row) pairs, in order): each ends the memory's open span and opens the next."""
    ends: dict[tuple[str, datetime], list[str]] = {}
    opened: dict[str, dict[str, Any]] = {}
    closed: list[dict[str, Any]] = []
    purged: dict[str, list[str]] = {}
    for memory, event in changes:
        pk, at = event["memory_id"], event["at"]
        if pk in opened:  # a second write of the memory in the same transaction
            span = opened.pop(pk)
            if span["start"] < at:
                closed.append({**span, "end": at})
        elif event["action"] not in BORN:
            ends.setdefault((event["mind_id"], at), []).append(pk)
        if event["action"] == Action.PURGE:
            purged.setdefault(event["mind_id"], []).append(pk)
        elif event["action"] in OPENING and memory is not None:
            values = {name: getattr(memory, name) for name in SPANNED}
            opened[pk] = span_row(pk, memory.mind_id, values, start=at, end=None)
    for (mind_id, at), ids in ends.items():
        open_spans = MemorySpan.objects.filter(mind_id=mind_id, memory_id__in=ids, end=None)
        open_spans.update(end=at)
    for mind_id, ids in purged.items():
        MemorySpan.objects.filter(mind_id=mind_id, memory_id__in=ids).delete()
    rows.insert(MemorySpan, [*closed, *opened.values()])


def tags_purged(mind_id: str, memory_id: str) -> None:
    """The memory's earlier tags are purged from its trail: so from its spans, where they
    held before the latest change of its tags (what a rebuild shows then: no tags)."""
    changed = MemoryEvent.objects.filter(
        mind_id=mind_id, memory_id=memory_id, changes__has_key="tags"
    ).aggregate(last=Max("at"))["last"]
    if changed is not None:
        spans = MemorySpan.objects.filter(mind_id=mind_id, memory_id=memory_id, start__lt=changed)
        spans.update(tags=tags_text([]))


def ended_since(mind: Mind, at: datetime) -> QuerySet[MemorySpan, MemorySpan]:
    """The spans of the memories `mind` held at `at` that a write since ended."""
    return MemorySpan.objects.filter(mind=mind, end__gt=at, start__lte=at)


def opened_since(mind: Mind, at: datetime) -> QuerySet[MemorySpan, MemorySpan]:
    """The spans opened since `at` that still hold: today's memories written since."""
    return MemorySpan.objects.filter(mind=mind, end=None, start__gt=at)


def narrowed(
    spans: QuerySet[MemorySpan, MemorySpan], filters: MemoryFilters, *, now: datetime
) -> QuerySet[MemorySpan, MemorySpan]:
    """`spans` narrowed as a recall's `filters` narrow memories (MemoryFilters.apply): by
    expiry at `now`, superseded or not, category and tags."""
    if filters.expired == "hide":
        spans = spans.filter(live_q(now))
    elif filters.expired == "only":
        spans = spans.filter(expired_q(now))
    if not filters.superseded:
        spans = spans.filter(superseded_by="")
    if filters.category is not None:
        spans = spans.filter(category=filters.category)
    for tag in filters.all_tags:
        # A tag's JSON string is found only whole: its quotes bound it.
        spans = spans.filter(tags__contains=json.dumps(tag))
    return spans
