"""Reads of memories. Every function takes the mind: scoping is an argument, never optional."""

from __future__ import annotations

from datetime import datetime

from django.http import Http404
from django.utils import timezone

from memories.models import Memory
from minds.models import Mind


def memory_get(*, mind: Mind, memory_id: str) -> Memory:
    """The memory `memory_id` of this mind; another mind's memory is a 404 like a missing one."""
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
