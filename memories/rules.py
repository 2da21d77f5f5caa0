"""The rules of a memory write: one validator for every body, whatever face it came through.

`memory_body_clean` judges a store, an update, a sync or import item, an MCP `remember` and
the dashboard's edit form alike. The field rules: README.md#memories; design notes:
docs/internals.md#the-rules-of-a-body.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.text import slugify

from core.errors import NON_FIELD, Invalid
from memories.actors import Actor
from memories.fields import CATEGORIES, IGNORED_FIELDS, PRIORITIES, SOURCES, WRITABLE_FIELDS
from memories.models import MAX_CONTENT_LENGTH, MAX_KEY_LENGTH, MAX_TAG_LENGTH, MAX_TAGS, Source


class _Unset:
    """Marks an argument that was not given (None is a real value: null)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

# How many memories one bulk call (sync, one batch of an import) may carry.
BULK_MAX_ITEMS = 1000

# (default source, sources the actor may ask for)
SOURCE_POLICY: dict[str, tuple[str, frozenset[str]]] = {
    "agent": (Source.AGENT, frozenset({Source.AGENT, Source.TOOL})),
    "user": (Source.USER, frozenset({Source.USER, Source.TOOL, Source.SYSTEM})),
    "system": (Source.SYSTEM, frozenset(Source.values)),
}
DEFAULT_CONFIDENCE: dict[str, float] = {
    Source.USER: 1.0,
    Source.SYSTEM: 1.0,
    Source.AGENT: 0.7,
    Source.TOOL: 0.7,
}

_CATEGORY_SET = frozenset(CATEGORIES)
_PRIORITY_RANKS = {name: rank for rank, name in enumerate(PRIORITIES)}
# NUL is refused by PostgreSQL; lone surrogates cannot be stored as UTF-8 at all.
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")


# --- One field at a time: each returns the cleaned value or raises ValueError(message) -------


def clean_category(value: Any) -> str:
    if isinstance(value, str) and value.strip().lower() in _CATEGORY_SET:
        return value.strip().lower()
    raise ValueError(f"Must be one of: {', '.join(CATEGORIES)}.")


def clean_priority(value: Any) -> int:
    """A priority name (case-insensitive) → its rank."""
    if isinstance(value, str) and value.strip().lower() in _PRIORITY_RANKS:
        return _PRIORITY_RANKS[value.strip().lower()]
    raise ValueError(f"Must be one of: {', '.join(PRIORITIES)}.")


def clean_source(value: Any) -> str:
    """A source name (case-insensitive); whether the actor gets it is `resolve_source`'s."""
    if isinstance(value, str) and value.strip().lower() in SOURCES:
        return value.strip().lower()
    raise ValueError(f"Must be one of: {', '.join(SOURCES)}.")


def clean_content(value: Any) -> str:
    """Any text of 1 to 50,000 characters, kept as sent (not stripped); blank is empty."""
    if not isinstance(value, str):
        raise ValueError("Must be a string.")
    if not value.strip():
        raise ValueError("May not be empty or only whitespace.")
    if len(value) > MAX_CONTENT_LENGTH:
        raise ValueError(f"At most {MAX_CONTENT_LENGTH:,} characters, got {len(value):,}.")
    if _UNENCODABLE.search(value):
        raise ValueError("Contains a NUL character or an invalid (surrogate) code point.")
    return value


_MEMORY_ID = re.compile(r"mem_[a-z0-9]{1,28}")


def clean_memory_id(value: Any) -> str:
    """A memory id (`mem_…`) as a body names another memory."""
    if not isinstance(value, str) or not _MEMORY_ID.fullmatch(value):
        raise ValueError("Must be a memory id (mem_…) or null.")
    return value


def _is_bad_key_char(ch: str) -> bool:
    # Whitespace and separators (Z*), control (Cc), invisible format (Cf) and surrogates (Cs).
    return ch.isspace() or unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"}


def clean_key(value: Any) -> str:
    """1-200 characters, no whitespace or control characters; case-sensitive, not altered."""
    if not isinstance(value, str):
        raise ValueError("Must be a string.")
    if not value:
        raise ValueError("May not be empty (omit it to let the server derive one).")
    if len(value) > MAX_KEY_LENGTH:
        raise ValueError(f"At most {MAX_KEY_LENGTH} characters, got {len(value)}.")
    if any(_is_bad_key_char(ch) for ch in value):
        raise ValueError("May not contain whitespace or control characters (use snake_case).")
    return value


def can_be_stored(value: str | None) -> bool:
    """False for text no record can hold (a NUL), so a lookup by it finds nothing: SQLite
    finds no match, PostgreSQL would refuse to compare it at all."""
    return value is None or "\x00" not in value


def quotas() -> dict[str, int]:
    """What one mind may hold, read at each write (0: no limit): its memories, the bytes of
    their content, and the bytes of earlier values its audit trail keeps (`history`, never
    refused: past it the oldest are folded, memories/audit.py)."""
    return {
        "memories": max(settings.SYNAPSE_MAX_MEMORIES_PER_MIND, 0),
        "bytes": max(settings.SYNAPSE_MAX_MIND_BYTES, 0),
        "history": max(settings.SYNAPSE_MAX_HISTORY_BYTES, 0),
    }


def content_bytes(content: str) -> int:
    """What a memory's content counts against its mind's storage quota: its UTF-8 bytes."""
    if content.isascii():  # constant time in CPython: most content needs no encoding
        return len(content)
    return len(content.encode("utf-8", "surrogatepass"))


def normalize_tag(tag: str) -> str:
    """Tags are trimmed and lower-cased; matching is case-insensitive."""
    return tag.strip().lower()


def clean_tags(value: Any) -> list[str]:
    """Trimmed, lower-cased, de-duplicated (first occurrence wins); at most 20 of 1-64 chars."""
    if not isinstance(value, list | tuple):
        raise ValueError("Must be a list of strings.")
    tags: dict[str, None] = {}  # ordered, and O(1) to test: a long list stays linear
    for item in value:
        if not isinstance(item, str):
            raise ValueError("Must be a list of strings.")
        tag = normalize_tag(item)
        if not tag:
            raise ValueError("A tag may not be empty.")
        if len(tag) > MAX_TAG_LENGTH:
            raise ValueError(f"A tag has at most {MAX_TAG_LENGTH} characters: {tag[:20]}…")
        if _UNENCODABLE.search(tag) or any(unicodedata.category(ch) == "Cc" for ch in tag):
            raise ValueError("A tag may not contain control characters.")
        tags[tag] = None
        if len(tags) > MAX_TAGS:
            # Refused at the first tag over the limit: a huge list costs what MAX_TAGS + 1 do.
            raise ValueError(f"At most {MAX_TAGS} different tags; got more ({len(value):,} given).")
    return list(tags)


def clean_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Must be a number between 0.0 and 1.0.")
    try:
        number = float(value)
    except OverflowError:  # JSON integers have no size limit; past ~1e308 no float holds one
        raise ValueError("Must be a number between 0.0 and 1.0.") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ValueError("Must be a number between 0.0 and 1.0.")
    return number


TIMESTAMP_FORMS = "an ISO-8601 timestamp (2026-12-31T23:59:00Z) or Unix epoch seconds"


def _from_epoch(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise ValueError("not a finite number")
    return datetime.fromtimestamp(seconds, tz=UTC)


def parse_timestamp(value: Any) -> datetime:
    """ISO-8601 (naive means UTC) or Unix epoch seconds (number or numeric string) → UTC.

    Raises ValueError with a readable message.
    """
    try:
        if isinstance(value, datetime):
            parsed = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _from_epoch(float(value))
        if isinstance(value, str):
            text = value.strip()
            if _NUMBER.fullmatch(text):
                return _from_epoch(float(text))
            parsed = datetime.fromisoformat(text)
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        pass
    raise ValueError(f"Must be {TIMESTAMP_FORMS}.")


def clean_expires_at(value: Any) -> datetime:
    try:
        return parse_timestamp(value)
    except ValueError:
        raise ValueError(f"Must be {TIMESTAMP_FORMS}, or null.") from None


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DURATION_FORMS = "seconds (3600) or a number with a unit: 30m, 24h, 7d, 2w"
MAX_DURATION = timedelta(days=100 * 366)
_DURATION = re.compile(r"(\d+)\s*([smhdw]?)")


def parse_duration(value: Any) -> timedelta:
    """A positive duration: whole seconds, or a whole number with s, m, h, d or w (≤ 100 y)."""
    match = _DURATION.fullmatch(str(value).strip().lower())
    seconds = int(match[1]) * DURATION_UNITS[match[2] or "s"] if match else 0
    if not 0 < seconds <= MAX_DURATION.total_seconds():
        raise ValueError(f"Must be {DURATION_FORMS} (at most 100 years).")
    return timedelta(seconds=seconds)


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


def resolve_source(*, actor: Actor, requested: str | None) -> tuple[str, list[str]]:
    """The source a write by `actor` is stored with, and a warning when the ask was refused."""
    default, allowed = SOURCE_POLICY[actor.kind]
    if requested is None or requested in allowed:
        return requested or default, []
    if actor.kind == "agent":
        why = (
            f'source "{requested}" cannot be set with a Mind Key: stored as "agent" and '
            "unverified (only a person's login stores user or system memories)."
        )
    else:
        why = (
            f'source "{requested}" is for memories written with a Mind Key: stored as "{default}".'
        )
    return default, [why]


# --- The validator --------------------------------------------------------------------------

# The writable fields' rules; `source` is judged apart (the actor decides what it gets).
CLEANERS: dict[str, Callable[[Any], Any]] = {
    "category": clean_category,
    "key": clean_key,
    "content": clean_content,
    "tags": clean_tags,
    "priority": clean_priority,
    "source": clean_source,
    "confidence": clean_confidence,
    "expires_at": clean_expires_at,
}
assert set(CLEANERS) == set(WRITABLE_FIELDS), "every writable field has exactly one rule"

# What null means for a field that takes it; any other field may not be null.
_NULL_MEANS: dict[str, Any] = {"tags": [], "expires_at": None}
# Besides its fields, a write body may name the memory of the mind it replaces
# (services.memory_supersede); null or absent names none.
SUPERSEDES = "supersedes"
_WRITABLE = frozenset((*WRITABLE_FIELDS, SUPERSEDES))
_IGNORED = frozenset(IGNORED_FIELDS)
# The fields of an export record a person's import keeps (`Provenance`).
PROVENANCE_FIELDS = frozenset({"verified", "verified_by", "verified_at"})
_UNKNOWN = f"Unknown field. Writable fields: {', '.join(WRITABLE_FIELDS)}."
MAX_UNKNOWN_NAMED = 10  # unknown fields named one by one in a refusal


@dataclass(frozen=True)
class Provenance:
    """Source and verification a person restoring an export keeps (`restore=True`)."""

    source: str
    verified: bool
    verified_by: str
    verified_at: datetime | None


@dataclass(frozen=True)
class MemoryWrite:
    """A write body after the rules: what the services store."""

    # The cleaned fields the body gave, of category, key, content, tags, priority,
    # confidence and expires_at (`key` always present on a store: given or derived).
    values: dict[str, Any]
    # The source to store when the body asked for one (already decided by the actor).
    source: str | None
    warnings: tuple[str, ...] = ()
    provenance: Provenance | None = None
    # The id of the memory this write replaces, when the body named one.
    supersedes: str | None = None


def memory_body_clean(
    body: Any,
    *,
    actor: Actor,
    mind_id: str | None = None,
    partial: bool = False,
    restore: bool = False,
) -> MemoryWrite:
    """Judge one write body: the cleaned fields, or `Invalid` naming every field at fault.

    `partial`: an update, where every field is optional (and `key` may not be null).
    `mind_id`: the mind the request acts on; a body naming another one is refused.
    `restore`: an import record of an export; a person's keeps its source and verification.
    """
    if not isinstance(body, Mapping):
        raise Invalid.one(NON_FIELD, "Must be a JSON object of a memory's fields.")
    errors: dict[str, list[str]] = {}
    ignored: list[str] = []
    unknown = 0
    for name in body:
        if name in _IGNORED:
            ignored.append(name)
        elif name not in _WRITABLE:
            unknown += 1
            if unknown <= MAX_UNKNOWN_NAMED:
                errors[str(name)] = [_UNKNOWN]
    if unknown > MAX_UNKNOWN_NAMED:
        # A body of many thousand made-up names gets a short answer, not one entry for each.
        more = unknown - MAX_UNKNOWN_NAMED
        errors[NON_FIELD] = [f"And {more:,} more unknown fields, not named here."]
    if not restore and mind_id is not None and body.get("mind_id") not in (None, mind_id):
        errors["mind_id"] = [
            f"This request acts on mind {mind_id}; this memory names another. Name the mind "
            "with ?mind=m_… or the X-Mind-Id header, not in the body."
        ]
    if not partial:
        for name in ("category", "content"):
            if name not in body:
                errors[name] = ["This field is required."]

    values: dict[str, Any] = {}
    supersedes = None
    if body.get(SUPERSEDES) is not None:
        try:
            supersedes = clean_memory_id(body[SUPERSEDES])
        except ValueError as exc:
            errors[SUPERSEDES] = [str(exc)]
    for name, clean in CLEANERS.items():
        if name not in body:
            continue
        value = body[name]
        if value is None:
            if name in _NULL_MEANS:
                values[name] = _NULL_MEANS[name]
            elif name != "key" or partial:  # a store derives a null key
                errors[name] = ["This field may not be null."]
            continue
        try:
            values[name] = clean(value)
        except ValueError as exc:
            errors[name] = [str(exc)]

    provenance = None
    warnings: list[str] = []
    if restore and actor.kind == "user" and "source" not in errors:
        # The source was checked above with the other fields; the record's is kept as it was.
        source = values.pop("source", None) or Source.USER
        provenance = _provenance(body, source, actor=actor, errors=errors, warnings=warnings)
    if errors:
        raise Invalid(errors)

    source = values.pop("source", None)
    if source is not None:
        source, source_warnings = resolve_source(actor=actor, requested=source)
        warnings += source_warnings
    if not partial and values.get("key") is None:
        values["key"] = derive_key(category=values["category"], content=values["content"])
    if provenance is not None:  # what a person's import keeps is not ignored
        ignored = [name for name in ignored if name not in PROVENANCE_FIELDS]
    if ignored:
        warnings.append(f"Ignored fields the server sets: {', '.join(ignored)}.")
    return MemoryWrite(values, source, tuple(warnings), provenance, supersedes)


def _provenance(
    body: Mapping[str, Any],
    source: str,
    *,
    actor: Actor,
    errors: dict[str, list[str]],
    warnings: list[str],
) -> Provenance | None:
    """The source and verification an export record carries (a person's import).

    Verification is a person's word: a record keeps it only when it names the importing
    person (or no one); one verified by someone else arrives unverified, with a warning.
    """
    verified = body.get("verified", source == Source.USER)
    if not isinstance(verified, bool):
        errors["verified"] = ["Must be true or false."]
    verified_by = body.get("verified_by") or ""
    if not isinstance(verified_by, str) or _UNENCODABLE.search(verified_by):
        errors["verified_by"] = ["Must be a string without NUL or surrogate code points."]
    verified_at = None
    if body.get("verified_at") is not None:
        try:
            verified_at = parse_timestamp(body["verified_at"])
        except ValueError as exc:
            errors["verified_at"] = [str(exc)]
        else:
            if verified_at > timezone.now():
                errors["verified_at"] = ["May not lie in the future."]
    if any(name in errors for name in ("verified", "verified_by", "verified_at")):
        return None
    if verified and verified_by and verified_by.casefold() != actor.name.casefold():
        warnings.append(
            f"Imported unverified: verified by {verified_by[:254]}, not by you; verify it again."
        )
        return Provenance(source, False, "", None)
    return Provenance(source, bool(verified), actor.name if verified else "", verified_at)
