"""Writes to memories. Every create, update, delete and (un)verification goes through here.

The rules that decide what a write means live here and nowhere else, so the API, the admin,
bulk sync and any later caller behave the same:

- Upsert by (mind, category, key); a race on one key ends as one row (the unique constraint
  is the arbiter: a losing insert is retried as an update inside the same transaction).
- The source is decided by the actor, not the body: an agent stores `agent` (default) or
  `tool`; a person stores `user` (default), `tool` or `system`; anything else is downgraded
  to the actor's default and the result carries a warning.
- A person's write leaves the memory verified (by them). When an agent or the system
  changes the content of a verified memory, verification is cleared.
- Omitted fields keep their current value on update; a field sent explicitly is applied
  (`tags: []` clears tags, `expires_at: None` removes the expiry).
- A write that changes nothing is not written: no new `updated_at`, no audit row.
- Every write that changes something records one MemoryEvent with the old and new values;
  a delete records every old value (the tombstone `/memory/diff` reads).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models, transaction
from django.http import Http404
from django.utils import timezone
from django.utils.text import slugify
from rest_framework.exceptions import PermissionDenied, ValidationError

from memories.models import (
    MAX_CONTENT_LENGTH,
    MAX_KEY_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    Category,
    Memory,
    MemoryEvent,
    MemoryTag,
    Priority,
    Source,
    new_memory_id,
)
from memories.params import normalize_tag
from memories.serialization import PRIORITY_NAMES, iso
from minds.authentication import MindAgent, is_human
from minds.models import Mind
from synapse_site.errors import Conflict
from synapse_site.ids import random_ids
from synapse_site.rawsql import fetch, select_columns


class _Unset:
    """Marks an argument that was not given (None is a real value for `expires_at`)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

ActorKind = Literal["user", "agent", "system"]


@dataclass(frozen=True)
class Actor:
    """Who writes: a person (email), an agent (its Mind Key prefix) or the system."""

    kind: ActorKind
    name: str

    @classmethod
    def for_user(cls, user) -> Actor:
        return cls(kind="user", name=user.email)

    @classmethod
    def for_agent(cls, agent: MindAgent) -> Actor:
        return cls(kind="agent", name=agent.actor)

    @classmethod
    def system(cls, name: str = "system") -> Actor:
        return cls(kind="system", name=name)


def actor_for_request(request) -> Actor:
    """The actor behind an authenticated API request."""
    user = request.user
    if isinstance(user, MindAgent):
        return Actor.for_agent(user)
    if is_human(user):
        return Actor.for_user(user)
    raise PermissionDenied("This needs a Mind Key or a person's login.")


@dataclass
class UpsertResult:
    memory: Memory
    action: Literal["created", "updated"]
    warnings: list[str] = field(default_factory=list)
    # False when an "updated" store matched the stored values exactly (nothing was written).
    changed: bool = True


# (default source, sources the actor may ask for)
SOURCE_POLICY: dict[str, tuple[str, frozenset[str]]] = {
    "agent": (Source.AGENT, frozenset({Source.AGENT, Source.TOOL})),
    "user": (Source.USER, frozenset({Source.USER, Source.TOOL, Source.SYSTEM})),
    "system": (Source.SYSTEM, frozenset(Source.values)),
}
DEFAULT_CONFIDENCE = {Source.USER: 1.0, Source.SYSTEM: 1.0, Source.AGENT: 0.7, Source.TOOL: 0.7}

# Fields recorded in the audit trail, in this order.
AUDITED_FIELDS = (
    "category",
    "key",
    "content",
    "tags",
    "priority",
    "source",
    "verified",
    "confidence",
    "expires_at",
    "verified_at",
    "verified_by",
)
TOMBSTONE_FIELDS = (*AUDITED_FIELDS, "created_at", "updated_at")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")


def _invalid(name: str, message: str) -> ValidationError:
    return ValidationError({name: [message]})


# --- Field rules ----------------------------------------------------------------------------


_CATEGORIES = frozenset(Category.values)  # Category.values builds a new list per call
_PRIORITY_RANKS = {p.label: p.value for p in Priority}


def clean_category(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in _CATEGORIES:
        return value.strip().lower()
    raise _invalid("category", f"Must be one of: {', '.join(Category.values)}.")


def clean_priority(value: Any) -> int:
    if isinstance(value, Priority):
        return int(value)
    if isinstance(value, str):
        name = value.strip().lower()
        if name in _PRIORITY_RANKS:
            return _PRIORITY_RANKS[name]
    raise _invalid("priority", f"Must be one of: {', '.join(PRIORITY_NAMES.values())}.")


# NUL is refused by PostgreSQL; lone surrogates cannot be stored as UTF-8 at all.
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")


def _has_unencodable(text: str) -> bool:
    return _UNENCODABLE.search(text) is not None


def clean_content(value: Any) -> str:
    """Any text of 1 to 50,000 characters, kept as sent (not stripped); blank is empty."""
    if not isinstance(value, str):
        raise _invalid("content", "Must be a string.")
    if not value.strip():
        raise _invalid("content", "May not be empty or only whitespace.")
    if len(value) > MAX_CONTENT_LENGTH:
        raise _invalid("content", f"At most {MAX_CONTENT_LENGTH:,} characters, got {len(value):,}.")
    if _has_unencodable(value):
        raise _invalid("content", "Contains a NUL character or an invalid (surrogate) code point.")
    return value


def _is_bad_key_char(ch: str) -> bool:
    # Whitespace and separators (Z*), control (Cc), invisible format (Cf) and surrogates (Cs).
    return ch.isspace() or unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"}


def clean_key(value: Any) -> str:
    """1-200 characters, no whitespace or control characters; case-sensitive, not altered."""
    if not isinstance(value, str):
        raise _invalid("key", "Must be a string.")
    if not value:
        raise _invalid("key", "May not be empty (omit it to let the server derive one).")
    if len(value) > MAX_KEY_LENGTH:
        raise _invalid("key", f"At most {MAX_KEY_LENGTH} characters, got {len(value)}.")
    plain = value.isascii() and value.isprintable() and " " not in value  # the usual key
    if not plain and any(_is_bad_key_char(ch) for ch in value):
        raise _invalid("key", "May not contain whitespace or control characters (use snake_case).")
    return value


def clean_tags(value: Any) -> list[str]:
    """Trimmed, lower-cased, de-duplicated (first occurrence wins); at most 20 of 1-64 chars."""
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _invalid("tags", "Must be a list of strings.")
    tags: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise _invalid("tags", "Must be a list of strings.")
        tag = normalize_tag(item)
        if not tag:
            raise _invalid("tags", "A tag may not be empty.")
        if len(tag) > MAX_TAG_LENGTH:
            raise _invalid("tags", f"A tag has at most {MAX_TAG_LENGTH} characters: {tag[:20]}…")
        if _has_unencodable(tag) or any(unicodedata.category(ch) == "Cc" for ch in tag):
            raise _invalid("tags", "A tag may not contain control characters.")
        if tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise _invalid("tags", f"At most {MAX_TAGS} tags, got {len(tags)}.")
    return tags


def clean_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid("confidence", "Must be a number between 0.0 and 1.0.")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise _invalid("confidence", "Must be a number between 0.0 and 1.0.")
    return number


def _from_epoch(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise ValueError("not a finite number")
    return datetime.fromtimestamp(seconds, tz=UTC)


def parse_timestamp(value: Any) -> datetime | None:
    """ISO-8601 (naive means UTC) or Unix epoch seconds (number or numeric string) → UTC.

    Raises ValueError with a readable message.
    """
    if value is None:
        return None
    try:
        if isinstance(value, datetime):
            parsed = value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _from_epoch(float(value))
        if isinstance(value, str):
            text = value.strip()
            if _NUMBER.fullmatch(text):
                return _from_epoch(float(text))
            parsed = datetime.fromisoformat(text)
            if timezone.is_naive(parsed):
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise ValueError(
        "Must be an ISO-8601 timestamp (2026-12-31T23:59:00Z) or Unix epoch seconds, or null."
    )


def clean_expires_at(value: Any) -> datetime | None:
    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise _invalid("expires_at", str(exc)) from None


CLEANERS = {
    "category": clean_category,
    "key": clean_key,
    "content": clean_content,
    "tags": clean_tags,
    "priority": clean_priority,
    "confidence": clean_confidence,
    "expires_at": clean_expires_at,
}


def _clean_given(fields: dict[str, Any], missing: Any) -> dict[str, Any]:
    """Each field whose value is not `missing`, cleaned by its rule (in the order given)."""
    return {name: CLEANERS[name](value) for name, value in fields.items() if value is not missing}


def derive_key(*, category: str, content: str) -> str:
    """A stable key for content stored without one: `<category>_<first words>_<hash>`.

    Content is normalised (Unicode NFKC, case-folded, whitespace collapsed) first, so storing
    the same text again finds the same memory instead of adding a duplicate.
    """
    normalised = " ".join(unicodedata.normalize("NFKC", content).casefold().split())
    digest = hashlib.sha256(f"{category}\n{normalised}".encode()).hexdigest()[:10]
    words = slugify(" ".join(normalised.split()[:6]), allow_unicode=True)
    words = words.replace("-", "_")[:48].strip("_")
    return f"{category}_{words}_{digest}" if words else f"{category}_{digest}"


def resolve_source(*, actor: Actor, requested: Any) -> tuple[str, list[str]]:
    """The source a write by `actor` is stored with, and a warning when the ask was refused."""
    default, allowed = SOURCE_POLICY[actor.kind]
    if requested is None:
        return default, []
    name = requested.strip().lower() if isinstance(requested, str) else requested
    if name not in Source.values:
        raise _invalid("source", f"Must be one of: {', '.join(Source.values)}.")
    if name in allowed:
        return name, []
    if actor.kind == "agent":
        why = (
            f'source "{name}" cannot be set with a Mind Key: stored as "agent" and unverified '
            "(only a person's login stores user or system memories)."
        )
    else:
        why = f'source "{name}" is for memories written with a Mind Key: stored as "{default}".'
    return default, [why]


# --- Audit helpers --------------------------------------------------------------------------


def _audit_value(name: str, value: Any) -> Any:
    if name == "priority":
        return PRIORITY_NAMES[value]
    if isinstance(value, datetime):
        return iso(value)
    if name == "verified_by":
        return value or None
    if name == "tags":
        return list(value)
    return value


def _snapshot(memory: Memory, fields: tuple[str, ...] = AUDITED_FIELDS) -> dict[str, Any]:
    return {name: _audit_value(name, getattr(memory, name)) for name in fields}


def _event_values(
    *, memory: Memory, actor: Actor, action: str, changes: dict[str, Any], now: datetime
) -> dict[str, Any]:
    return {
        "mind_id": memory.mind_id,
        "memory_id": memory.pk,
        "category": memory.category,
        "key": memory.key,
        "action": action,
        "actor": actor.name[:254],
        "actor_type": actor.kind,
        "at": now,
        "changes": changes,
    }


def _event(
    *, memory: Memory, actor: Actor, action: str, changes: dict[str, Any], now: datetime
) -> MemoryEvent:
    return MemoryEvent(
        **_event_values(memory=memory, actor=actor, action=action, changes=changes, now=now)
    )


def _record(
    *, memory: Memory, actor: Actor, action: str, changes: dict[str, Any], now: datetime
) -> MemoryEvent:
    event = _event(memory=memory, actor=actor, action=action, changes=changes, now=now)
    event.save(force_insert=True)
    return event


def _created_changes(memory: Memory) -> dict[str, dict[str, Any]]:
    return {name: {"old": None, "new": value} for name, value in _snapshot(memory).items()}


def _apply(
    *,
    memory: Memory,
    actor: Actor,
    values: dict[str, Any],
    source: str,
    source_requested: bool,
    creating: bool,
    now: datetime,
    provenance: Provenance | None = None,
) -> None:
    """Apply cleaned `values` plus the source/verification rules to `memory` (unsaved).

    `provenance` (a person restoring an export) then sets source and verification as they
    were recorded.
    """
    before = None if creating else _snapshot(memory)
    content_changed = "content" in values and values["content"] != memory.content
    for name, value in values.items():
        setattr(memory, name, value)

    source_changed = False
    # The source names who wrote the current text: it follows a content change or an
    # explicit (allowed) request, never a tag or priority edit.
    if creating or content_changed or source_requested:
        source_changed = memory.source != source
        memory.source = source
    if "confidence" not in values and (creating or source_changed):
        memory.confidence = DEFAULT_CONFIDENCE[memory.source]

    edited = creating or before != _snapshot(memory)
    if actor.kind == "user":
        # A person editing it vouches for it (a store that changes nothing verifies nothing).
        if edited and (creating or content_changed or not memory.verified):
            memory.verified, memory.verified_by, memory.verified_at = True, actor.name, now
    elif content_changed and memory.verified:
        # A person confirmed the old text, not this one.
        memory.verified, memory.verified_by, memory.verified_at = False, "", None
    if provenance is not None:
        memory.source = provenance.source
        if "confidence" not in values and (creating or source_changed):
            memory.confidence = DEFAULT_CONFIDENCE[memory.source]
        if provenance.verified:
            memory.verified = True
            memory.verified_by = provenance.verified_by or actor.name
            memory.verified_at = provenance.verified_at or now
        else:
            memory.verified, memory.verified_by, memory.verified_at = False, "", None


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: {"old": before[name], "new": after[name]}
        for name in AUDITED_FIELDS
        if before[name] != after[name]
    }


# --- Services -------------------------------------------------------------------------------


def _locked_where(where: str, params: list[Any]) -> Memory | None:
    """The memory matching `where` (SQL over memories_memory's columns), row-locked (FOR
    UPDATE) where the database has row locks; on SQLite the write transaction already holds
    the database's write lock.

    Written out because every write runs it: the ORM spent ~0.5 ms compiling the equivalent
    select_for_update().filter().first(), ten times what the database takes to run it.
    """
    quote = connection.ops.quote_name
    sql = f"SELECT {select_columns(Memory)} FROM {quote(Memory._meta.db_table)} WHERE {where}"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    return next(iter(fetch(Memory, sql, params)), None)


def _locked(*, mind: Mind, category: str, key: str) -> Memory | None:
    return _locked_where(
        '"mind_id" = %s AND "category" = %s AND "key" = %s', [mind.pk, category, key]
    )


def _locked_by_pk(pk: str) -> Memory | None:
    return _locked_where('"id" = %s', [pk])


def _plan_update(
    *,
    memory: Memory,
    actor: Actor,
    values: dict[str, Any],
    source: str,
    source_requested: bool,
    now: datetime,
    provenance: Provenance | None = None,
) -> dict[str, dict[str, Any]]:
    """Apply an update to `memory` without saving; its audit changes ({} when none).

    When something changes, `updated_at` becomes `now`.
    """
    before = _snapshot(memory)
    _apply(
        memory=memory,
        actor=actor,
        values=values,
        source=source,
        source_requested=source_requested,
        creating=False,
        now=now,
        provenance=provenance,
    )
    changes = _changes(before, _snapshot(memory))
    if changes:
        memory.updated_at = now
    return changes


@dataclass(frozen=True)
class Provenance:
    """Source and verification carried over by a person restoring an export (`mind_import`)."""

    source: str
    verified: bool
    verified_by: str
    verified_at: datetime | None


@dataclass
class _Store:
    """One store request after the field rules: what memory_upsert(_many) writes."""

    category: str
    key: str
    values: dict[str, Any]
    source: str
    source_requested: bool
    warnings: list[str]
    provenance: Provenance | None = None


def _prepare_store(
    *,
    actor: Actor,
    category: Any,
    content: Any,
    key: Any = None,
    tags: Any = None,
    priority: Any = None,
    source: Any = None,
    confidence: Any = None,
    expires_at: Any = UNSET,
) -> _Store:
    category = clean_category(category)
    content = clean_content(content)
    key = derive_key(category=category, content=content) if key is None else clean_key(key)
    values = {
        "content": content,
        # On a store None means "not given"; for expires_at None removes the expiry.
        **_clean_given({"tags": tags, "priority": priority, "confidence": confidence}, None),
        **_clean_given({"expires_at": expires_at}, UNSET),
    }
    resolved, warnings = resolve_source(actor=actor, requested=source)
    return _Store(category, key, values, resolved, source is not None, warnings)


def _new_memory(
    *, mind: Mind, actor: Actor, store: _Store, now: datetime, pk: str | None = None
) -> Memory:
    memory = Memory(
        id=pk or new_memory_id(),
        mind=mind,
        category=store.category,
        key=store.key,
        created_at=now,
        updated_at=now,
    )
    _apply(
        memory=memory,
        actor=actor,
        values=store.values,
        source=store.source,
        source_requested=store.source_requested,
        creating=True,
        now=now,
        provenance=store.provenance,
    )
    return memory


def memory_upsert(
    *,
    mind: Mind,
    actor: Actor,
    category: str,
    content: str,
    key: str | None = None,
    tags: list[str] | None = None,
    priority: str | int | None = None,
    source: str | None = None,
    confidence: float | None = None,
    expires_at: Any = UNSET,
    now: datetime | None = None,
) -> UpsertResult:
    """Create the memory (mind, category, key) or update it in place.

    `key=None` derives a stable key from the content. Omitted fields (None, or UNSET for
    `expires_at`) keep their stored value on update and take the defaults on create;
    `tags=[]` clears the tags and `expires_at=None` removes the expiry. Two requests racing
    on one key end as one row, both answered: the loser of the insert updates.
    """
    store = _prepare_store(
        actor=actor,
        category=category,
        content=content,
        key=key,
        tags=tags,
        priority=priority,
        source=source,
        confidence=confidence,
        expires_at=expires_at,
    )
    return _upsert_one(mind=mind, actor=actor, store=store, now=now)


def memory_store(*, mind: Mind, actor: Actor, body: Any) -> UpsertResult:
    """Upsert the JSON body of `POST /memory` as it came, checked by the rules of a sync item
    (_sync_store, the rules of MemoryWriteSerializer) and then as memory_upsert checks.

    Raises ValidationError when the body is refused; nothing is written then.
    """
    store = _sync_store(mind=mind, actor=actor, item=body, keep_provenance=False)
    return _upsert_one(mind=mind, actor=actor, store=store, now=None)


def _upsert_one(*, mind: Mind, actor: Actor, store: _Store, now: datetime | None) -> UpsertResult:
    given = now
    with transaction.atomic():
        existing = _locked(mind=mind, category=store.category, key=store.key)
        # Stamped inside the transaction (on SQLite: under the write lock) and after the row
        # lock (PostgreSQL), so one memory's timestamps follow the order its writes commit in
        # and /memory/diff can hand out `until` without losing writes.
        now = given or timezone.now()
        if existing is None:
            memory = _new_memory(mind=mind, actor=actor, store=store, now=now)
            if _writers_serialised():
                # Nobody can have inserted this key since the lookup.
                _insert_new([memory], actor=actor, now=now)
                return UpsertResult(memory=memory, action="created", warnings=store.warnings)
            try:
                with transaction.atomic():
                    _insert_new([memory], actor=actor, now=now)
            except IntegrityError:
                # Another request inserted this key after our lookup: update that row instead.
                existing = _locked(mind=mind, category=store.category, key=store.key)
                if existing is None:
                    raise
                now = given or timezone.now()
            else:
                return UpsertResult(memory=memory, action="created", warnings=store.warnings)
        return _update_many([(existing, store)], actor=actor, now=now)[0]


SYNC_MAX_ITEMS = 1000


@dataclass
class ItemRefused:
    """A bulk item that was not written, with the ValidationError that says why."""

    error: ValidationError


def _sync_store(*, mind: Mind, actor: Actor, item: Any, keep_provenance: bool) -> _Store:
    """One bulk item → _Store, by the rules of POST /memory's body (MemoryWriteSerializer):
    unknown fields and nulls where a value is needed are refused, fields the server sets are
    ignored, a `mind_id` naming another mind is refused; `tags: null` clears the tags."""
    if not isinstance(item, dict):
        raise ValidationError({"non_field_errors": ["Each memory must be a JSON object."]})
    errors: dict[str, list[str]] = {}
    for name in item:
        if name not in _STORE_FIELD_SET and name not in SERVER_SET_FIELDS:
            errors[str(name)] = [f"Unknown field. Writable fields: {', '.join(STORE_FIELDS)}."]
    for name in ("category", "content"):
        if name not in item:
            errors[name] = ["This field is required."]
    for name in ("category", "content", "priority", "source", "confidence"):
        if name in item and item[name] is None:
            errors[name] = ["This field may not be null."]
    if item.get("mind_id") not in (None, mind.pk):
        errors["mind_id"] = [f"This request acts on mind {mind.pk}; this memory names another."]
    if errors:
        raise ValidationError(errors)
    fields = {name: item[name] for name in STORE_FIELDS if name in item}
    if "tags" in fields and fields["tags"] is None:
        fields["tags"] = []
    if "expires_at" not in item:
        fields["expires_at"] = UNSET
    provenance = None
    if keep_provenance and actor.kind == "user":
        provenance = _provenance(item, actor=actor)
        fields.pop("source", None)
    store = _prepare_store(actor=actor, **fields)
    return store if provenance is None else replace(store, provenance=provenance)


def _provenance(item: dict, *, actor: Actor) -> Provenance:
    source = item.get("source") or Source.USER
    if source not in Source.values:
        raise _invalid("source", f"Must be one of: {', '.join(Source.values)}.")
    verified = item.get("verified", source == Source.USER)
    if not isinstance(verified, bool):
        raise _invalid("verified", "Must be true or false.")
    verified_by = item.get("verified_by") or ""
    if not isinstance(verified_by, str):
        raise _invalid("verified_by", "Must be a string.")
    try:
        verified_at = parse_timestamp(item.get("verified_at"))
    except ValueError as exc:
        raise _invalid("verified_at", str(exc)) from None
    return Provenance(source, verified, verified_by[:254], verified_at)


STORE_FIELDS = (
    "category",
    "content",
    "key",
    "tags",
    "priority",
    "source",
    "confidence",
    "expires_at",
)
_STORE_FIELD_SET = frozenset(STORE_FIELDS)
# Set by the server: a client may send back a record it read (or an export) unchanged.
SERVER_SET_FIELDS = frozenset(
    {
        "id",
        "mind_id",
        "verified",
        "verified_by",
        "verified_at",
        "created_at",
        "updated_at",
        "action",
        "warnings",
        "expired",
    }
)


def memory_upsert_many(
    *,
    mind: Mind,
    actor: Actor,
    items: list[Any],
    keep_provenance: bool = False,
    now: datetime | None = None,
) -> list[UpsertResult | ItemRefused]:
    """Upsert each item (a dict of memory_upsert's arguments) with memory_upsert's rules.

    Returns, in order, an UpsertResult per stored item or an ItemRefused for an item the
    field rules refuse; a refused item writes nothing and does not stop the others.
    `keep_provenance` (import by a person) keeps each item's source and verification.

    The same outcome as calling memory_upsert per item, in bulk: every item is checked
    first; one query finds the stored memories; new ones are inserted with their tag rows
    and audit rows, one executemany statement per table; changed ones are updated with one
    statement per set of changed columns (an unchanged one writes nothing). An item
    repeating an earlier item's (category, key) is applied after the others, in order, with
    memory_upsert's own path. Everything is stamped with one time, taken under the write
    lock, and commits in one transaction. If the bulk insert collides with a
    concurrent writer of the same key, the batch falls back to memory_upsert item by item,
    each in its own savepoint, where the race is settled as usual. (On SQLite, where the
    transaction holds the write lock from its start, that cannot happen and the batch is
    inserted without a savepoint.)
    """
    if len(items) > SYNC_MAX_ITEMS:
        raise _invalid("memories", f"At most {SYNC_MAX_ITEMS} memories per call, got {len(items)}.")
    outcomes: list[UpsertResult | ItemRefused | None] = [None] * len(items)
    first: dict[tuple[str, str], int] = {}
    stores: dict[int, _Store] = {}
    repeats: list[int] = []
    for index, item in enumerate(items):
        try:
            store = _sync_store(mind=mind, actor=actor, item=item, keep_provenance=keep_provenance)
        except ValidationError as exc:
            outcomes[index] = ItemRefused(exc)
            continue
        stores[index] = store
        if first.setdefault((store.category, store.key), index) != index:
            repeats.append(index)

    # category IN and key IN: the unique (mind, category, key) index answers each pair with
    # one probe; `key IN` alone would scan every memory of the mind.
    with_keys = Memory.objects.filter(
        mind=mind,
        category__in={category for category, _ in first},
        key__in={key for _, key in first},
    )
    # Drafts of the memories this call will probably create (ids, defaults, the source and
    # verification rules), built before the write lock is taken so other writers do not wait
    # for work that needs neither the lock nor the final timestamp. This lookup is only a
    # hint; the one under the lock decides.
    drafted = now or timezone.now()
    known = set(with_keys.values_list("category", "key"))
    missing = [index for pair, index in first.items() if pair not in known]
    # Ids sharing a random start: one run in each index keyed by the id (random_ids).
    ids = random_ids("mem_", len(missing))
    drafts = {
        index: _new_memory(mind=mind, actor=actor, store=stores[index], now=drafted, pk=pk)
        for index, pk in zip(missing, ids, strict=True)
    }

    # No savepoint when called inside a transaction (an Idempotency-Key, an import): a
    # failure here fails that transaction anyway, and on SQLite a savepoint first copies
    # every page the batch changes to a sub-journal.
    with transaction.atomic(savepoint=False):
        stored = {
            (m.category, m.key): m
            for m in with_keys.select_for_update()
            if (m.category, m.key) in first
        }
        now = now or timezone.now()  # after the row locks: see _upsert_one
        new: dict[int, Memory] = {}
        existing: dict[int, Memory] = {}
        for pair, index in first.items():
            if pair in stored:
                existing[index] = stored[pair]
            elif index in drafts:
                new[index] = _restamp(drafts[index], store=stores[index], drafted=drafted, now=now)
            else:
                new[index] = _new_memory(mind=mind, actor=actor, store=stores[index], now=now)
        if existing:
            updated = _update_many(
                [(memory, stores[index]) for index, memory in existing.items()],
                actor=actor,
                now=now,
            )
            for index, result in zip(existing, updated, strict=True):
                outcomes[index] = result
        if new and _writers_serialised():
            # No other writer can have taken these keys since the lookup: insert them all.
            _insert_new(list(new.values()), actor=actor, now=now)
        elif new:
            try:
                with transaction.atomic():  # a savepoint: roll back this batch alone
                    _insert_new(list(new.values()), actor=actor, now=now)
            except IntegrityError:
                # A concurrent writer took one of these keys: settle each as memory_upsert does.
                for index in new:
                    outcomes[index] = _upsert_one(
                        mind=mind, actor=actor, store=stores[index], now=now
                    )
                new = {}
        for index, memory in new.items():
            outcomes[index] = UpsertResult(
                memory=memory, action="created", warnings=stores[index].warnings
            )
        for index in repeats:
            outcomes[index] = _upsert_one(mind=mind, actor=actor, store=stores[index], now=now)
    return outcomes  # type: ignore[return-value]  # every slot is filled above


def mind_import(
    *, mind: Mind, actor: Actor, records: list[Any], now: datetime | None = None
) -> list[UpsertResult | ItemRefused]:
    """Store the memories of an export (`GET /mind/export?format=json`) into `mind`.

    Each record is upserted by (category, key) like a sync item, in one transaction; its
    `id` and `mind_id` are not kept (ids are per mind and new). A person restoring keeps
    each memory's source and verification; an agent's import is stored as any agent write
    (agent or tool, unverified).
    """
    items = [
        {name: value for name, value in record.items() if name not in ("id", "mind_id")}
        if isinstance(record, dict)
        else record
        for record in records
    ]
    outcomes: list[UpsertResult | ItemRefused] = []
    with transaction.atomic():
        for start in range(0, len(items), SYNC_MAX_ITEMS):
            outcomes += memory_upsert_many(
                mind=mind,
                actor=actor,
                items=items[start : start + SYNC_MAX_ITEMS],
                keep_provenance=True,
                now=now,
            )
    return outcomes


def _restamp(memory: Memory, *, store: _Store, drafted: datetime, now: datetime) -> Memory:
    """Move a draft from the time it was drafted to the time it is written."""
    memory.created_at = memory.updated_at = now
    restored = store.provenance is not None and store.provenance.verified_at is not None
    if memory.verified_at == drafted and not restored:  # verified by the writing person
        memory.verified_at = now
    return memory


def _writers_serialised() -> bool:
    """True when a write transaction holds the database's write lock from its first statement
    (SQLite with BEGIN IMMEDIATE or EXCLUSIVE, our setting): then nobody can insert a key
    between our lookup and our insert, and the bulk insert needs no savepoint. A savepoint
    is not free on SQLite: every page the batch changes is first copied to a sub-journal,
    which about doubled the cost of inserting into memories_memory."""
    return connection.vendor == "sqlite" and getattr(connection, "transaction_mode", None) in (
        "IMMEDIATE",
        "EXCLUSIVE",
    )


def _update_many(
    pairs: list[tuple[Memory, _Store]], *, actor: Actor, now: datetime
) -> list[UpsertResult]:
    """Apply each store to its stored memory (_plan_update), writing in bulk:
    one UPDATE statement per set of changed columns (run with executemany), the tag rows
    and the `update` audit rows in one statement each. An unchanged memory writes nothing."""
    results: list[UpsertResult] = []
    by_columns: dict[tuple[str, ...], list[Memory]] = {}
    events: list[dict[str, Any]] = []
    tags_added: list[dict[str, Any]] = []
    tags_removed: list[tuple[str, str]] = []
    for memory, store in pairs:
        old_tags = list(memory.tags)
        changes = _plan_update(
            memory=memory,
            actor=actor,
            values=store.values,
            source=store.source,
            source_requested=store.source_requested,
            now=now,
            provenance=store.provenance,
        )
        results.append(
            UpsertResult(
                memory=memory, action="updated", warnings=store.warnings, changed=bool(changes)
            )
        )
        if not changes:
            continue
        by_columns.setdefault((*changes, "updated_at"), []).append(memory)
        if "tags" in changes:
            new_tags = list(memory.tags)
            tags_removed += [(memory.pk, tag) for tag in old_tags if tag not in new_tags]
            tags_added += [
                {"memory_id": memory.pk, "mind_id": memory.mind_id, "tag": tag}
                for tag in new_tags
                if tag not in old_tags
            ]
        events.append(
            _event_values(
                memory=memory,
                actor=actor,
                action=MemoryEvent.Action.UPDATE,
                changes=changes,
                now=now,
            )
        )
    for columns, memories in by_columns.items():
        _update_rows(Memory, memories, columns)
    if tags_removed:
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            cursor.executemany(
                f"DELETE FROM {quote(MemoryTag._meta.db_table)} "
                f"WHERE {quote('memory_id')} = %s AND {quote('tag')} = %s",
                tags_removed,
            )
    _insert_rows(MemoryTag, tags_added)
    _insert_rows(MemoryEvent, events)
    return results


def _insert_new(memories: list[Memory], *, actor: Actor, now: datetime) -> None:
    """INSERT new memories with their tag rows and `create` audit rows, one statement each."""
    _insert_rows(Memory, [m.__dict__ for m in memories])
    for memory in memories:
        memory._state.adding = False  # stored, as bulk_create leaves them
    _insert_rows(
        MemoryTag,
        [{"memory_id": m.pk, "mind_id": m.mind_id, "tag": tag} for m in memories for tag in m.tags],
    )
    _insert_rows(
        MemoryEvent,
        [
            _event_values(
                memory=m,
                actor=actor,
                action=MemoryEvent.Action.CREATE,
                changes=_created_changes(m),
                now=now,
            )
            for m in memories
        ],
    )


def _stored_as_is(field: models.Field) -> tuple[type, ...]:
    """Python types this field stores unchanged (get_db_prep_save would return them as they
    are), so the bulk insert may skip the call for them; () when every value needs it."""
    if isinstance(field, models.ForeignKey):
        return _stored_as_is(field.target_field)
    plain: tuple[type, ...] = ()
    if isinstance(field, models.CharField | models.TextField):
        plain = (str,)
    elif isinstance(field, models.BooleanField):
        plain = (bool,)
    elif isinstance(field, models.FloatField):
        plain = (float,)
    elif isinstance(field, models.IntegerField) and not isinstance(field, models.AutoField):
        plain = (int,)
    return (*plain, type(None)) if plain and field.null else plain


def _db_values(fields: list[models.Field], rows: Iterable[dict[str, Any]]) -> list[list[Any]]:
    """Each row ({attname: value}) as database values for `fields`, prepared by each field's
    get_db_prep_save as the ORM does; plain strings and numbers of plain fields pass as they
    are, a timestamp shared by many rows is prepared once, a missing value takes the default."""
    prepared: dict[tuple[str, Any], Any] = {}
    # The connection itself, not the `connection` proxy: fields read several of its
    # attributes per value, and each read through the proxy is a thread-local lookup.
    db = connections[DEFAULT_DB_ALIAS]

    def prep(field: models.Field, as_is: tuple[type, ...], as_json: bool, value: Any) -> Any:
        if type(value) in as_is:
            return value
        if as_json and value is not None:
            return orjson.dumps(value).decode()
        if isinstance(value, datetime):
            cached = prepared.get((field.attname, value))
            if cached is None:
                cached = prepared[field.attname, value] = field.get_db_prep_save(value, db)
            return cached
        return field.get_db_prep_save(value, db)

    # SQLite stores JSON as text, which Django writes with json.dumps; orjson writes the same
    # values several times faster (tags and audit changes are plain lists, strings, numbers).
    plan = [(f, f.attname, _stored_as_is(f), _json_as_text(f, db)) for f in fields]
    return [
        [
            prep(f, as_is, as_json, row[name] if name in row else f.get_default())
            for f, name, as_is, as_json in plan
        ]
        for row in rows
    ]


def _json_as_text(field: models.Field, db) -> bool:
    return db.vendor == "sqlite" and isinstance(field, models.JSONField) and field.encoder is None


def _insert_rows(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """One parameterised INSERT, run with executemany over `rows` ({attname: value}).

    For bulk sync: bulk_create spends most of its time building model instances and
    compiling a fresh multi-row statement per ~60 rows. No signals, no ids read back (like
    bulk_create on SQLite).
    """
    if not rows:
        return
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, models.AutoField)]
    quote = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        quote(model._meta.db_table),
        ", ".join(quote(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, _db_values(fields, rows))


def _update_rows(
    model: type[models.Model], objects: list[models.Model], names: Iterable[str]
) -> None:
    """UPDATE the columns `names` of each object by primary key: one statement, executemany.
    Like save(update_fields=names) per object, without signals."""
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    sql = "UPDATE {} SET {} WHERE {} = %s".format(
        quote(meta.db_table),
        ", ".join(f"{quote(f.column)} = %s" for f in fields),
        quote(meta.pk.column),
    )
    values = _db_values(fields, [obj.__dict__ for obj in objects])
    with connection.cursor() as cursor:
        cursor.executemany(sql, [[*row, obj.pk] for row, obj in zip(values, objects, strict=True)])


def memory_update(
    *,
    memory: Memory,
    actor: Actor,
    category: Any = UNSET,
    key: Any = UNSET,
    content: Any = UNSET,
    tags: Any = UNSET,
    priority: Any = UNSET,
    source: Any = UNSET,
    confidence: Any = UNSET,
    expires_at: Any = UNSET,
    now: datetime | None = None,
) -> Memory:
    """Change the given fields of `memory` (a partial update) and return the stored row.

    Moving it to a (category, key) another memory of the mind holds is a 409 Conflict.
    """
    values = _clean_given(
        {
            "category": category,
            "key": key,
            "content": content,
            "tags": tags,
            "priority": priority,
            "confidence": confidence,
            "expires_at": expires_at,
        },
        UNSET,
    )
    requested = None if source is UNSET else source
    resolved, _ = resolve_source(actor=actor, requested=requested)

    with transaction.atomic():
        current = _locked_by_pk(memory.pk)
        now = now or timezone.now()  # after the row lock: see _upsert_one
        if current is None:
            raise Http404("No memory with this id in this mind.")
        new_category = values.get("category", current.category)
        new_key = values.get("key", current.key)
        if (new_category, new_key) != (current.category, current.key):
            _refuse_clash(memory=current, category=new_category, key=new_key)
        store = _Store(
            category=current.category,
            key=current.key,
            values=values,
            source=resolved,
            source_requested=requested is not None,
            warnings=[],
        )
        try:
            with transaction.atomic():
                _update_many([(current, store)], actor=actor, now=now)
        except IntegrityError:
            # The (category, key) was taken between the check and the write.
            _refuse_clash(memory=current, category=new_category, key=new_key)
            raise
    return current


def _refuse_clash(*, memory: Memory, category: str, key: str) -> None:
    other = (
        Memory.objects.filter(mind_id=memory.mind_id, category=category, key=key)
        .exclude(pk=memory.pk)
        .values_list("pk", flat=True)
        .first()
    )
    if other is not None:
        raise Conflict(
            f'Another memory of this mind ({other}) already has category "{category}" and '
            f'key "{key}". Update that one, or pick another key.'
        )


def memory_delete(*, memory: Memory, actor: Actor, now: datetime | None = None) -> None:
    """Delete the memory; the audit row keeps every old value (the tombstone for diff)."""
    with transaction.atomic():
        current = _locked_by_pk(memory.pk)
        now = now or timezone.now()  # after the row lock: see _upsert_one
        if current is None:
            raise Http404("No memory with this id in this mind.")
        tombstone = {
            name: {"old": value, "new": None}
            for name, value in _snapshot(current, TOMBSTONE_FIELDS).items()
        }
        _record(
            memory=current,
            actor=actor,
            action=MemoryEvent.Action.DELETE,
            changes=tombstone,
            now=now,
        )
        current.delete()


def _set_verification(
    *, memory: Memory, actor: Actor, verified: bool, now: datetime | None
) -> Memory:
    if actor.kind != "user":
        raise PermissionDenied("Only a person can verify or unverify a memory.")
    with transaction.atomic():
        current = _locked_by_pk(memory.pk)
        now = now or timezone.now()  # after the row lock: see _upsert_one
        if current is None:
            raise Http404("No memory with this id in this mind.")
        if current.verified == verified:
            return current  # already so: nothing to write or record
        before = _snapshot(current)
        current.verified = verified
        current.verified_by = actor.name if verified else ""
        current.verified_at = now if verified else None
        current.updated_at = now
        current.save(update_fields=["verified", "verified_by", "verified_at", "updated_at"])
        action = MemoryEvent.Action.VERIFY if verified else MemoryEvent.Action.UNVERIFY
        _record(
            memory=current,
            actor=actor,
            action=action,
            changes=_changes(before, _snapshot(current)),
            now=now,
        )
    return current


def memory_verify(*, memory: Memory, actor: Actor, now: datetime | None = None) -> Memory:
    """Mark the memory verified by this person (a no-op when it already is verified)."""
    return _set_verification(memory=memory, actor=actor, verified=True, now=now)


def memory_unverify(*, memory: Memory, actor: Actor, now: datetime | None = None) -> Memory:
    """Clear verification, verified_by and verified_at (a no-op when it is not verified)."""
    return _set_verification(memory=memory, actor=actor, verified=False, now=now)
