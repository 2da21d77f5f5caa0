"""Many memories at once, written straight to the tables (and their tag rows), for tests that
need a mind past a page or a ranking depth. The search index's triggers see them as usual;
no vector is made (tests.api.memory_helpers.embed stores them where a test needs them)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from memories.models import Memory, MemoryTag


def many_memories(
    mind,
    count: int,
    *,
    content: Callable[[int], str] = lambda i: f"Note {i} about nothing in particular.",
    key: Callable[[int], str] = lambda i: f"note_{i:04d}",
    now: datetime | None = None,
    **fields: Any,
) -> list[Memory]:
    """`count` memories of `mind`, newest last; any other field (tags, expires_at, …) from
    `fields`, a value or a function of the index."""
    now = now or timezone.now()
    memories = []
    for i in range(count):
        values = {name: value(i) if callable(value) else value for name, value in fields.items()}
        values.setdefault("category", "note")
        values.setdefault("source", "agent")
        values.setdefault("tags", [])
        moment = now - timedelta(seconds=count - i)
        memories.append(
            Memory(
                mind=mind,
                key=key(i),
                content=content(i),
                created_at=moment,
                updated_at=moment,
                **values,
            )
        )
    with transaction.atomic():
        Memory.objects.bulk_create(memories)
        MemoryTag.objects.bulk_create(
            MemoryTag(memory=m, mind=mind, tag=tag) for m in memories for tag in m.tags
        )
    return memories
