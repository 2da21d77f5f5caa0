"""Memory → JSON-ready dict. A plain function: it sits on every hot path (list, recall, search)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import lru_cache

from memories.models import Memory, MemoryEvent, Priority

PRIORITY_NAMES = {p.value: p.label for p in Priority}


def iso(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a trailing Z, or None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def memory_to_dict(memory: Memory) -> dict:
    return {
        "id": memory.id,
        "mind_id": memory.mind_id,
        "category": memory.category,
        "key": memory.key,
        "content": memory.content,
        "tags": list(memory.tags),
        "priority": PRIORITY_NAMES[memory.priority],
        "source": memory.source,
        "verified": memory.verified,
        "confidence": memory.confidence,
        "expires_at": iso(memory.expires_at),
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "verified_at": iso(memory.verified_at),
        "verified_by": memory.verified_by or None,
    }


# memory_to_dict's input read as a plain tuple (values_list), tags as their JSON text: a large
# answer (recall of a whole mind) skips building a model instance and decoding JSON per row.
MEMORY_ROW = (
    "id",
    "mind_id",
    "category",
    "key",
    "content",
    "tags_json",
    "priority",
    "source",
    "verified",
    "confidence",
    "expires_at",
    "created_at",
    "updated_at",
    "verified_at",
    "verified_by",
)


@lru_cache(maxsize=4096)
def _tags(tags_json: str) -> tuple[str, ...]:
    # Minds reuse a few tag combinations over and over: decode each one once.
    return tuple(json.loads(tags_json))


def memory_row_to_dict(row: tuple) -> dict:
    """memory_to_dict for a MEMORY_ROW tuple (the same keys, values and order)."""
    (id_, mind_id, category, key, content, tags_json, priority, source, verified) = row[:9]
    confidence, expires_at, created_at, updated_at, verified_at, verified_by = row[9:]
    return {
        "id": id_,
        "mind_id": mind_id,
        "category": category,
        "key": key,
        "content": content,
        "tags": list(_tags(tags_json)),
        "priority": PRIORITY_NAMES[priority],
        "source": source,
        "verified": bool(verified),
        "confidence": confidence,
        "expires_at": iso(expires_at),
        "created_at": iso(created_at),
        "updated_at": iso(updated_at),
        "verified_at": iso(verified_at),
        "verified_by": verified_by or None,
    }


def event_to_dict(event: MemoryEvent) -> dict:
    """An audit entry: who did what to which memory, when, and the values it replaced."""
    return {
        "id": event.id,
        "at": iso(event.at),
        "action": event.action,
        "memory_id": event.memory_id,
        "category": event.category,
        "key": event.key,
        "actor": event.actor,
        "actor_type": event.actor_type,
        "changes": event.changes,
    }
