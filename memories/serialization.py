"""Memory → JSON-ready dict. A plain function: it sits on every hot path (list, recall, search)."""

from __future__ import annotations

from datetime import UTC, datetime

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
