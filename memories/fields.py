"""The memory's public fields, declared once.

`MEMORY_FIELDS` lists every field a client sees, in the order answers show them, with who
sets it and what the audit trail and the dashboard's restore do with it. Everything that
lists fields derives from it: the JSON shape (`memory_to_dict`), the export and its CSV
columns, the MCP schemas, the audited fields and tombstones, the restorable fields, the
admin's read-only fields, and which body fields a write ignores as the server's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from memories.models import (
    MAX_CONTENT_LENGTH,
    MAX_KEY_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    Category,
    Memory,
    MemoryEvent,
    Priority,
    Source,
)

if TYPE_CHECKING:  # a type only: memories.search stands on the rules, which read these fields
    from memories.search import SearchPage

PRIORITY_NAMES: dict[int, str] = {p.value: p.label for p in Priority}
CATEGORIES: tuple[str, ...] = tuple(Category.values)
PRIORITIES: tuple[str, ...] = tuple(PRIORITY_NAMES[p.value] for p in Priority)
SOURCES: tuple[str, ...] = tuple(Source.values)

# A key has no whitespace, control or invisible format characters (rules.clean_key), as a
# JSON Schema pattern for the schemas that describe it.
KEY_PATTERN = (
    r"^[^\s\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
    r"\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    r"\ufff9-\ufffb]+$"
)
TAG_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
CONTENT_PATTERN = r"^[^\x00]*[^\s\x00][^\x00]*$"


def iso(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a trailing Z, or None."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _same(value: Any) -> Any:
    return value


def _or_none(value: Any) -> Any:
    return value or None


def _or_empty(value: Any) -> Any:
    return value or ""


def _from_iso(value: str | None) -> datetime | None:
    """iso()'s inverse."""
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def _rank(name: str) -> int:
    return next(rank for rank, shown in PRIORITY_NAMES.items() if shown == name)


@dataclass(frozen=True)
class PublicField:
    """One field of the memory as clients see it."""

    name: str
    # Who sets it: the client on a write, or the server (a body may carry it; it is ignored).
    set_by: Literal["client", "server"]
    # JSON Schema of the value as answered, and (client fields) of what a write accepts.
    schema: dict[str, Any]
    accepts: dict[str, Any] | None = None
    audited: bool = False  # kept in the audit trail's old/new values
    restorable: bool = False  # a person can put an earlier version's value back
    attname: str = ""  # the model attribute, when it is not `name`
    encode: Callable[[Any], Any] = _same  # model value → JSON value
    decode: Callable[[Any], Any] = _same  # JSON value → model value

    @property
    def attribute(self) -> str:
        return self.attname or self.name


_STRING = {"type": "string"}
_TIMESTAMP = {"type": "string", "format": "date-time"}
_NULLABLE_TIMESTAMP = {"type": ["string", "null"], "format": "date-time"}
_TAG = {"type": "string", "minLength": 1, "maxLength": MAX_TAG_LENGTH, "pattern": TAG_PATTERN}
# Unix epoch seconds of the years 1 to 9999.
_EPOCH = {"type": "number", "minimum": -62135596800, "maximum": 253402300799}

MEMORY_FIELDS: tuple[PublicField, ...] = (
    PublicField("id", "server", _STRING),
    PublicField("mind_id", "server", _STRING),
    PublicField(
        "category",
        "client",
        {"type": "string", "enum": list(CATEGORIES)},
        accepts={"type": "string", "enum": list(CATEGORIES)},
        audited=True,
        restorable=True,
    ),
    PublicField(
        "key",
        "client",
        _STRING,
        # null (or no key) derives a stable key from category and content.
        accepts={
            "type": ["string", "null"],
            "minLength": 1,
            "maxLength": MAX_KEY_LENGTH,
            "pattern": KEY_PATTERN,
        },
        audited=True,
        restorable=True,
    ),
    PublicField(
        "content",
        "client",
        _STRING,
        accepts={
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_CONTENT_LENGTH,
            "pattern": CONTENT_PATTERN,
        },
        audited=True,
        restorable=True,
    ),
    PublicField(
        "tags",
        "client",
        {"type": "array", "items": _STRING},
        # null clears the tags, as [] does.
        accepts={"type": ["array", "null"], "items": _TAG, "maxItems": MAX_TAGS},
        audited=True,
        restorable=True,
        encode=list,
        decode=list,
    ),
    PublicField(
        "priority",
        "client",
        {"type": "string", "enum": list(PRIORITIES)},
        accepts={"type": "string", "enum": list(PRIORITIES)},
        audited=True,
        restorable=True,
        encode=PRIORITY_NAMES.__getitem__,
        decode=_rank,
    ),
    PublicField(
        "source",
        "client",
        {"type": "string", "enum": list(SOURCES)},
        # The credential decides what is kept: a Mind Key gets agent or tool.
        accepts={"type": "string", "enum": list(SOURCES)},
        audited=True,
    ),
    PublicField("verified", "server", {"type": "boolean"}, audited=True),
    PublicField(
        "confidence",
        "client",
        {"type": "number", "minimum": 0, "maximum": 1},
        accepts={"type": "number", "minimum": 0, "maximum": 1},
        audited=True,
        restorable=True,
    ),
    PublicField(
        "expires_at",
        "client",
        _NULLABLE_TIMESTAMP,
        # ISO-8601 or Unix epoch seconds; null removes the expiry.
        accepts={"anyOf": [_TIMESTAMP, _EPOCH, {"type": "null"}]},
        audited=True,
        restorable=True,
        encode=iso,
        decode=_from_iso,
    ),
    PublicField("created_at", "server", _TIMESTAMP, encode=iso, decode=_from_iso),
    PublicField("updated_at", "server", _TIMESTAMP, encode=iso, decode=_from_iso),
    PublicField(
        "verified_at",
        "server",
        _NULLABLE_TIMESTAMP,
        audited=True,
        encode=iso,
        decode=_from_iso,
    ),
    PublicField(
        "verified_by",
        "server",
        {"type": ["string", "null"]},
        audited=True,
        encode=_or_none,
        decode=_or_empty,
    ),
    # Set by a supersede (memories/hygiene/supersede.py), never by a write body.
    PublicField(
        "superseded_by",
        "server",
        {"type": ["string", "null"]},
        audited=True,
        attname="superseded_by_id",
    ),
)

FIELDS_BY_NAME: dict[str, PublicField] = {f.name: f for f in MEMORY_FIELDS}
PUBLIC_FIELDS: tuple[str, ...] = tuple(f.name for f in MEMORY_FIELDS)
WRITABLE_FIELDS: tuple[str, ...] = tuple(f.name for f in MEMORY_FIELDS if f.set_by == "client")
AUDITED_FIELDS: tuple[str, ...] = tuple(f.name for f in MEMORY_FIELDS if f.audited)
RESTORABLE_FIELDS: tuple[str, ...] = tuple(f.name for f in MEMORY_FIELDS if f.restorable)
# A delete's audit row keeps every value but the ids: the tombstone /memory/diff reads.
TOMBSTONE_FIELDS: tuple[str, ...] = tuple(
    name for name in PUBLIC_FIELDS if name not in ("id", "mind_id")
)

# Export records carry whether the memory had expired when exported, beside its expiry.
EXPORT_EXTRA = "expired"
_EXPIRY = PUBLIC_FIELDS.index("expires_at") + 1
EXPORT_FIELDS: tuple[str, ...] = (*PUBLIC_FIELDS[:_EXPIRY], EXPORT_EXTRA, *PUBLIC_FIELDS[_EXPIRY:])
# CSV is per mind: the mind's id would repeat on every row.
CSV_COLUMNS: tuple[str, ...] = tuple(name for name in EXPORT_FIELDS if name != "mind_id")

# What a write body may carry besides its writable fields, ignored (and named in the
# answer's warnings): the server's fields, so a client can send back a record it read, plus
# what answers and exports add to a record.
ANSWER_EXTRAS: tuple[str, ...] = ("action", "warnings", EXPORT_EXTRA)
IGNORED_FIELDS: tuple[str, ...] = (
    *(f.name for f in MEMORY_FIELDS if f.set_by == "server"),
    *ANSWER_EXTRAS,
)

# The admin shows the model's relation, not its column.
ADMIN_FIELDS: tuple[str, ...] = tuple("mind" if n == "mind_id" else n for n in PUBLIC_FIELDS)

_ENCODERS = tuple((f.name, f.attribute, f.encode) for f in MEMORY_FIELDS)


def memory_to_dict(memory: Memory) -> dict[str, Any]:
    """The memory as every face answers it: the public fields, in order."""
    return {name: encode(getattr(memory, attribute)) for name, attribute, encode in _ENCODERS}


def values_to_dict(values: Mapping[str, Any]) -> dict[str, Any]:
    """memory_to_dict for a row read as values (`VALUE_NAMES`), not as a model instance."""
    return {name: encode(values[attribute]) for name, attribute, encode in _ENCODERS}


VALUE_NAMES: tuple[str, ...] = tuple(f.attribute for f in MEMORY_FIELDS)


def page_to_dict(
    memories: Iterable[Memory], *, total: int, limit: int, offset: int
) -> dict[str, Any]:
    """A memory list as every face answers it (API lists, MCP list tools)."""
    return {
        "memories": [memory_to_dict(m) for m in memories],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


# What a store answers in `action`: "unchanged" when the body matched what was stored.
STORE_ACTIONS = ("created", "updated", "unchanged")


def stored_to_dict(memory: Memory, *, action: str, warnings: list[str]) -> dict[str, Any]:
    """The answer of a store: the memory, what was done, and what was not as asked."""
    return {**memory_to_dict(memory), "action": action, "warnings": warnings}


def search_to_dict(page: SearchPage) -> dict[str, Any]:
    """A search as every face answers it: each memory with its score, snippet and `match`
    (found by `keyword`, by `meaning` or `both`); the `mode` it ran in and its `warnings`
    (search by meaning unavailable: keywords alone)."""
    results = [
        {
            **memory_to_dict(hit.memory),
            "score": hit.score,
            "snippet": hit.snippet,
            "match": hit.match,
        }
        for hit in page.hits
    ]
    return {
        "query": page.query,
        "results": results,
        "total": page.total,
        "mode": page.mode,
        "warnings": list(page.warnings),
    }


def similar_to_dict(query: str, similar: list[tuple[Memory, float]], total: int) -> dict[str, Any]:
    """A search by meaning as the client's semantic_search reads it: each memory with its
    `similarity` (cosine, 0 to 1)."""
    results = [{**memory_to_dict(memory), "similarity": s} for memory, s in similar]
    return {"query": query, "results": results, "total": total}


def audit_values(memory: Memory, names: tuple[str, ...] = AUDITED_FIELDS) -> dict[str, Any]:
    """The named fields of `memory` as the audit trail keeps them (their JSON values)."""
    fields = (FIELDS_BY_NAME[name] for name in names)
    return {f.name: f.encode(getattr(memory, f.attribute)) for f in fields}


def memory_from_values(values: Mapping[str, Any], *, memory_id: str, mind_id: str) -> Memory:
    """audit_values' inverse: an unsaved memory with the values (JSON form) a tombstone
    holds; a field `values` lacks keeps the model's default."""
    given = (f for f in MEMORY_FIELDS if f.name in values and f.name not in ("id", "mind_id"))
    return Memory(
        id=memory_id, mind_id=mind_id, **{f.attribute: f.decode(values[f.name]) for f in given}
    )


def event_to_dict(event: MemoryEvent) -> dict[str, Any]:
    """An audit entry: who did what to which memory, when, and the values it replaced."""
    return {
        "id": event.pk,
        "at": iso(event.at),
        "action": event.action,
        "memory_id": event.memory_id,
        "category": event.category,
        "key": event.key,
        "actor": event.actor,
        "actor_type": event.actor_type,
        "changes": event.changes,
    }


def output_schema() -> dict[str, Any]:
    """JSON Schema of a memory as answered (MCP tools' outputSchema)."""
    return {
        "type": "object",
        "properties": {f.name: dict(f.schema) for f in MEMORY_FIELDS},
        "required": list(PUBLIC_FIELDS),
    }


def input_schema() -> dict[str, Any]:
    """JSON Schema of a store body's writable fields (category and content required)."""
    return {
        "type": "object",
        "properties": {f.name: dict(f.accepts or {}) for f in MEMORY_FIELDS if f.accepts},
        "required": ["category", "content"],
    }
