"""Writes to memories: store (upsert), bulk store, import, change (update), delete, verify,
supersede.

Every write is judged by `rules.memory_body_clean`, takes the mind's write lock, and is
written with its tag rows and audit rows in one transaction. Design notes:
docs/internals.md#the-services.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal

from django.db import connection, transaction
from django.utils import timezone

from core.errors import (
    Conflict,
    CoreError,
    Forbidden,
    Invalid,
    NotFound,
    QuotaExceeded,
    Stale,
)
from memories import audit, rows, spans
from memories.actors import Actor
from memories.embeddings import outbox
from memories.embeddings.text import EMBEDDED_FIELDS
from memories.fields import FIELDS_BY_NAME, TOMBSTONE_FIELDS, memory_from_values
from memories.filters import NO_FILTERS, MemoryFilters
from memories.hygiene import duplicates
from memories.hygiene.flags import memory_flags
from memories.models import Memory, MemoryEvent, MemoryTag, SupersedeProposal
from memories.recall import recall_caches_forget
from memories.rules import (
    BULK_MAX_ITEMS,
    DEFAULT_CONFIDENCE,
    SOURCE_POLICY,
    SUPERSEDES,
    UNSET,
    MemoryWrite,
    clean_tags,
    content_bytes,
    memory_body_clean,
    quotas,
)
from memories.search.forget import search_caches_forget, search_index_forget
from memories.selectors import memory_unverified_matching_ids
from memories.versions import Expected, is_version
from minds.models import Mind
from synapse_site.ids import random_ids

Action = MemoryEvent.Action
NOT_FOUND = "No memory with this id in this mind."
STALE = (
    "This memory changed since the version you read: nothing was written. Read it again and "
    "repeat the change if it still applies."
)


@dataclass
class UpsertResult:
    memory: Memory
    action: Literal["created", "updated"]
    warnings: list[str] = field(default_factory=list)
    # False when an "updated" store matched the stored values exactly (nothing was written).
    changed: bool = True
    # When the body named a verified memory to supersede and an agent wrote it: the
    # proposal that waits for a person instead.
    proposal: SupersedeProposal | None = None

    @property
    def outcome(self) -> Literal["created", "updated", "unchanged"]:
        """What the store did, as every face reports it."""
        return self.action if self.changed else "unchanged"


@dataclass
class ItemRefused:
    """A bulk item that was not written, and why."""

    error: Invalid


# --- Stores -------------------------------------------------------------------------------


def memory_store(
    *, mind: Mind, actor: Actor, body: Any, now: datetime | None = None
) -> UpsertResult:
    """Create the memory a store body describes, or update the one with its (category, key).

    Raises Invalid when the body is refused; nothing is written then.
    """
    write = memory_body_clean(body, actor=actor, mind_id=mind.pk)
    if write.supersedes is not None and not _successors_known(mind, [write]):
        raise Invalid.one(SUPERSEDES, NOT_FOUND)
    return _upsert(mind=mind, actor=actor, writes=[write], now=now)[0]


def memory_upsert(
    *,
    mind: Mind,
    actor: Actor,
    category: Any,
    content: Any,
    key: Any = UNSET,
    tags: Any = UNSET,
    priority: Any = UNSET,
    source: Any = UNSET,
    confidence: Any = UNSET,
    expires_at: Any = UNSET,
    now: datetime | None = None,
) -> UpsertResult:
    """memory_store with the body's fields as arguments; UNSET means "not given", None null."""
    body = _given(
        category=category,
        content=content,
        key=key,
        tags=tags,
        priority=priority,
        source=source,
        confidence=confidence,
        expires_at=expires_at,
    )
    return memory_store(mind=mind, actor=actor, body=body, now=now)


def _given(**fields: Any) -> dict[str, Any]:
    """The fields given: a body without the UNSET ones."""
    return {name: value for name, value in fields.items() if value is not UNSET}


def memory_upsert_many(
    *,
    mind: Mind,
    actor: Actor,
    items: Sequence[Any],
    restore: bool = False,
    now: datetime | None = None,
) -> list[UpsertResult | ItemRefused]:
    """Store each item (a store body) as memory_store would, in one transaction.

    Returns, in order, an UpsertResult per stored item or an ItemRefused for an item the
    rules refuse; a refused item writes nothing and does not stop the others. Items that
    repeat a (category, key) apply in order. `restore` (importing an export): a person's
    items keep their source and verification.
    """
    if len(items) > BULK_MAX_ITEMS:
        raise Invalid.one(
            "memories",
            f"At most {BULK_MAX_ITEMS} memories per call, got {len(items)}: "
            "send them in several calls.",
        )
    judged: list[MemoryWrite | ItemRefused] = []
    for item in items:
        try:
            judged.append(memory_body_clean(item, actor=actor, mind_id=mind.pk, restore=restore))
        except Invalid as exc:
            judged.append(ItemRefused(exc))
    known = _successors_known(mind, [w for w in judged if isinstance(w, MemoryWrite)])
    judged = [
        ItemRefused(Invalid.one(SUPERSEDES, NOT_FOUND))
        if isinstance(w, MemoryWrite) and w.supersedes is not None and w.supersedes not in known
        else w
        for w in judged
    ]
    writes = [w for w in judged if isinstance(w, MemoryWrite)]
    results = iter(_upsert(mind=mind, actor=actor, writes=writes, now=now))
    return [w if isinstance(w, ItemRefused) else next(results) for w in judged]


def mind_import(
    *, mind: Mind, actor: Actor, records: Sequence[Any], now: datetime | None = None
) -> list[UpsertResult | ItemRefused]:
    """Store the memories of an export (`GET /mind/export?format=json`) into `mind`.

    Each record is upserted by (category, key) like a sync item, all in one transaction;
    its `id` and `mind_id` are not kept (ids are new). A person restoring keeps each
    memory's source and verification; an agent's import is stored as any agent write.
    At most BULK_MAX_ITEMS records a call, as for a sync (a larger export is imported in
    several calls), so one import holds the mind's write lock no longer than a sync does.
    """
    return memory_upsert_many(mind=mind, actor=actor, items=records, restore=True, now=now)


def _upsert(
    *, mind: Mind, actor: Actor, writes: list[MemoryWrite], now: datetime | None
) -> list[UpsertResult]:
    if not writes:
        return []
    with _write_lock(mind.pk):
        now = now or timezone.now()
        pairs = {(w.values["category"], w.values["key"]) for w in writes}
        stored = _stored_by_key(mind, pairs)
        # New memories of one call share a random start: each index keyed by the id then
        # takes the batch as one run instead of one page per memory.
        ids = iter(random_ids("mem_", len(pairs - set(stored))))
        batch = _Writes(actor=actor, now=now)
        results = []
        for write in writes:
            pair = (write.values["category"], write.values["key"])
            memory = stored.get(pair)
            if memory is None:
                memory = Memory(
                    id=next(ids),
                    mind=mind,
                    category=pair[0],
                    key=pair[1],
                    created_at=now,
                    updated_at=now,
                )
                _apply(memory, write, actor=actor, before=None, now=now)
                batch.created(memory)
                stored[pair] = memory
                results.append(UpsertResult(memory, "created", list(write.warnings)))
            else:
                changed = batch.updated(memory, write)
                results.append(UpsertResult(memory, "updated", list(write.warnings), changed))
        batch.persist()
        replacing = [(w, r) for w, r in zip(writes, results, strict=True) if w.supersedes]
        if replacing:
            _supersede_named(mind, actor=actor, now=now, replacing=replacing)
    # After the supersedes (a memory this write replaced is no near-repeat of it), and out of
    # the write lock: a read, which other writers of the mind need not wait for.
    near = duplicates.store_warnings(mind_id=mind.pk, written=batch.new_content(), now=now)
    for result in results:
        result.warnings.extend(near.get(result.memory.pk, []))
    return results


def _successors_known(mind: Mind, writes: list[MemoryWrite]) -> set[str]:
    """The memories of `mind` that these writes name in `supersedes`."""
    named = {w.supersedes for w in writes if w.supersedes is not None}
    if not named:
        return set()
    return set(Memory.objects.filter(mind=mind, pk__in=named).values_list("pk", flat=True))


def _supersede_named(
    mind: Mind, *, actor: Actor, now: datetime, replacing: list[tuple[MemoryWrite, UpsertResult]]
) -> None:
    """Supersede what each stored memory's body named by that memory: the store's second
    step, in its transaction. A target gone meanwhile, the memory itself, or a loop is left
    as it is with a warning: the store itself stands."""
    targets = Memory.objects.filter(mind=mind, pk__in={w.supersedes for w, _ in replacing})
    by_id = {m.pk: m for m in targets}
    batch = _Writes(actor=actor, now=now)
    for write, result in replacing:
        target = by_id.get(write.supersedes or "")
        try:
            if target is None:
                raise Invalid.one(SUPERSEDES, NOT_FOUND)
            result.proposal = _supersede(batch, target, result.memory.pk, field=SUPERSEDES)
        except Invalid as exc:
            result.warnings.append(f"Superseded nothing: {exc.fields[SUPERSEDES][0]}")
            continue
        if result.proposal is not None:
            result.warnings.append(PROPOSED.format(id=target.pk))
    batch.persist()


def _stored_by_key(mind: Mind, pairs: set[tuple[str, str]]) -> dict[tuple[str, str], Memory]:
    """The mind's memories with these (category, key) pairs."""
    categories = sorted({category for category, _ in pairs})
    keys = sorted({key for _, key in pairs})
    # raw(): every store runs this, and compiling the ORM query costs several times what the
    # database takes to answer it. `category IN` and `key IN` let the unique (mind,
    # category, key) index answer each pair with one probe.
    quote = connection.ops.quote_name
    found = Memory.objects.raw(
        f"SELECT * FROM {quote(Memory._meta.db_table)} WHERE {quote('mind_id')} = %s "
        f"AND {quote('category')} IN ({', '.join(['%s'] * len(categories))}) "
        f"AND {quote('key')} IN ({', '.join(['%s'] * len(keys))})",
        [mind.pk, *categories, *keys],
    )
    return {(m.category, m.key): m for m in found if (m.category, m.key) in pairs}


# --- Changes to one memory ----------------------------------------------------------------


def memory_change(
    *,
    memory: Memory,
    actor: Actor,
    body: Any,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> UpsertResult:
    """Change the fields an update body gives (every field optional): the stored memory, with
    the body's warnings (fields the server sets, a source refused). Raises Invalid when the
    body is refused; moving it to a (category, key) another memory of the mind holds is a
    Conflict; a memory deleted meanwhile is NotFound; one that is no longer
    `expected_version` (when given) is Stale."""
    write = memory_body_clean(body, actor=actor, mind_id=memory.mind_id, partial=True)
    with _write_lock(memory.mind_id):
        current = _current(memory, expected_version)
        now = now or timezone.now()
        target = (
            write.values.get("category", current.category),
            write.values.get("key", current.key),
        )
        if target != (current.category, current.key):
            _refuse_clash(memory=current, category=target[0], key=target[1])
        batch = _Writes(actor=actor, now=now)
        changed = batch.updated(current, write)
        batch.persist()
    return UpsertResult(current, "updated", list(write.warnings), changed)


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
    expected_version: Expected = None,
    now: datetime | None = None,
) -> Memory:
    """memory_change with the body's fields as arguments; UNSET means "not given", None null."""
    body = _given(
        category=category,
        key=key,
        content=content,
        tags=tags,
        priority=priority,
        source=source,
        confidence=confidence,
        expires_at=expires_at,
    )
    return memory_change(
        memory=memory, actor=actor, body=body, expected_version=expected_version, now=now
    ).memory


def memory_delete(
    *,
    memory: Memory,
    actor: Actor,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> None:
    """Delete the memory; its audit row keeps every old value (the tombstone for diff).
    Stale, and nothing deleted, when it is no longer `expected_version` (when given)."""
    with _write_lock(memory.mind_id):
        current = _current(memory, expected_version)
        _delete(current, actor=actor, now=now or timezone.now())


def _delete(current: Memory, *, actor: Actor, now: datetime) -> None:
    """Delete a memory read under its mind's write lock, audited (memory_delete)."""
    changes = audit.tombstone(current)
    event = audit.event_row(
        memory=current, actor=actor, action=Action.DELETE, changes=changes, now=now
    )
    rows.insert(MemoryEvent, [event])
    _changed([(current, event)])
    _unsupersede_by(current, actor=actor, now=now)
    outbox.forget([current.pk])  # first: the worker's order (outbox.py)
    memory_id = current.pk
    current.delete()  # its tag rows and vector go with it
    current.pk = memory_id  # delete() clears it; callers still name the memory
    held = _charge(
        current.mind_id,
        memories=-1,
        size=-content_bytes(current.content),
        history=event["size"],
    )
    audit.history_fold(current.mind_id, held=held)


# Who hears of every audited change in its own transaction (the webhooks' outbox): each hook
# is called with (the memory as it is now, None when purged; its audit row) pairs.
ChangeHook = Callable[[Sequence[tuple[Memory | None, dict[str, Any]]]], None]
_change_hooks: list[ChangeHook] = []


def on_change(hook: ChangeHook) -> ChangeHook:
    """Register `hook` to hear of each write's changes in its transaction (an app's ready())."""
    if hook not in _change_hooks:
        _change_hooks.append(hook)
    return hook


def _changed(changes: Sequence[tuple[Memory | None, dict[str, Any]]]) -> None:
    spans.record(changes)
    for hook in _change_hooks:
        hook(changes)


# What the faces keep of a memory beyond the core's tables (an API's stored answers): each
# hook is called with (mind_id, memory_id) inside the purging transaction.
PurgeHook = Callable[[str, str], None]
_purge_hooks: list[PurgeHook] = []


def on_purge(hook: PurgeHook) -> PurgeHook:
    """Register `hook` to forget its copies of a memory being purged (a face's app ready())."""
    if hook not in _purge_hooks:
        _purge_hooks.append(hook)
    return hook


def memory_purge(
    *,
    memory: Memory,
    actor: Actor,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> None:
    """Delete the memory and forget it (a person only: Forbidden for anyone else): its
    values leave every event of its audit trail (PURGED), its vector, search index rows and
    queued embedding go, and so do the copies the faces keep (`on_purge`). One `purge` event
    records who purged which fields and when; it is also the tombstone incremental sync
    reads. Stale, and nothing purged, when it is no longer `expected_version` (when given)."""
    if actor.kind != "user":
        raise Forbidden("Only a person can purge a memory; a Mind Key may delete it.")
    with _write_lock(memory.mind_id):
        current = _current(memory, expected_version)
        now = now or timezone.now()
        mind_id, memory_id = current.mind_id, current.pk  # delete() clears the pk
        audit.values_purge(mind_id, memory_id, key=memory_id)
        event = audit.event_row(
            memory=current,
            actor=actor,
            action=Action.PURGE,
            changes=audit.purged_changes(TOMBSTONE_FIELDS),
            now=now,
        )
        event["key"] = memory_id  # a derived key repeats the content's first words
        event["size"] = 0  # it holds no values, like a folded event
        rows.insert(MemoryEvent, [event])
        _changed([(None, event)])
        _unsupersede_by(current, actor=actor, now=now)
        outbox.forget([memory_id])  # first: the worker's order (outbox.py)
        current.delete()  # its tag rows and vector go with it
        search_index_forget()
        for hook in _purge_hooks:
            hook(mind_id, memory_id)
        _charge(mind_id, memories=-1, size=-content_bytes(current.content))
        transaction.on_commit(lambda: _forgotten_everywhere(mind_id))


def memory_values_purge(*, memory: Memory, fields: Sequence[str]) -> int:
    """Purge the earlier values of these fields from every event of the memory (a redacted
    credential must not stay in its history); returns the bytes freed. The memory itself is
    left as it is."""
    with _write_lock(memory.mind_id):
        freed = audit.values_purge(memory.mind_id, memory.pk, fields=fields)
        if "tags" in fields:
            spans.tags_purged(memory.mind_id, memory.pk)
        search_index_forget()
        for hook in _purge_hooks:
            hook(memory.mind_id, memory.pk)
        mind_id = memory.mind_id
        transaction.on_commit(lambda: _forgotten_everywhere(mind_id))
    return freed


def _forgotten_everywhere(mind_id: str) -> None:
    """After a purge commits: this process's caches, and on SQLite the write-ahead log, whose
    frames still hold the pages as they were (cut back once every reader has moved on)."""
    search_caches_forget(mind_id)
    recall_caches_forget()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def memory_verify(
    *,
    memory: Memory,
    actor: Actor,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> Memory:
    """Mark the memory verified by this person (nothing to write when it already is).
    Stale, and nothing written, when it is no longer `expected_version` (when given): a
    person verifies the text they read, not one written since."""
    return _set_verification(
        memory=memory, actor=actor, verified=True, expected_version=expected_version, now=now
    )


def memory_unverify(
    *,
    memory: Memory,
    actor: Actor,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> Memory:
    """Clear verification, verified_by and verified_at (nothing to write when not verified).
    Stale, and nothing written, when it is no longer `expected_version` (when given)."""
    return _set_verification(
        memory=memory, actor=actor, verified=False, expected_version=expected_version, now=now
    )


@dataclass(frozen=True)
class Batch:
    """The audit rows one bulk write of a person wrote, named by their action and their
    instant (every row of one write has the same `at`): what memory_undo_batch takes back.
    It names no memory and holds no value, so a face may keep it (a session) as it is."""

    action: str
    at: datetime


@dataclass
class VerifiedMany:
    """What memory_verify_many did: how many it verified, and which it left as they were
    because they changed since the version the caller read (in id order); `batch` names
    its audit rows (None when it wrote nothing)."""

    verified: int
    stale: list[Memory] = field(default_factory=list)
    batch: Batch | None = None


def memory_verify_many(
    *,
    mind: Mind,
    actor: Actor,
    memory_ids: Sequence[str],
    expected_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> VerifiedMany:
    """Verify the unverified memories of `mind` among `memory_ids`, each audited; ids of
    other minds match nothing. With `expected_versions` ({id: version read}), a memory that
    is not that version (or has none given) is left as it is and listed as stale; the
    others are verified all the same."""
    done = _change_many(
        mind=mind,
        actor=actor,
        memory_ids=memory_ids,
        expected_versions=expected_versions,
        now=now,
        change=partial(_verify_one, verified=True),
    )
    return VerifiedMany(verified=done.changed, stale=done.stale, batch=done.batch)


@dataclass
class ChangedMany:
    """What a bulk change (unverify, delete, re-tag) did: how many memories it changed,
    which it left as they were because they changed since the version the caller read (in
    id order), and its `batch` (None when it wrote nothing)."""

    changed: int
    stale: list[Memory] = field(default_factory=list)
    batch: Batch | None = None


def memory_unverify_many(
    *,
    mind: Mind,
    actor: Actor,
    memory_ids: Sequence[str],
    expected_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> ChangedMany:
    """Unverify the verified memories of `mind` among `memory_ids`, as memory_verify_many
    verifies (a person only; other minds' ids match nothing; stale ones left)."""
    return _change_many(
        mind=mind,
        actor=actor,
        memory_ids=memory_ids,
        expected_versions=expected_versions,
        now=now,
        change=partial(_verify_one, verified=False),
    )


def memory_delete_many(
    *,
    mind: Mind,
    actor: Actor,
    memory_ids: Sequence[str],
    expected_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> ChangedMany:
    """Delete the memories of `mind` among `memory_ids`, each as memory_delete deletes it
    (its tombstone in the audit trail), in one transaction; a person only, so that the
    batch can be undone. Other minds' ids match nothing; with `expected_versions`, one that
    changed since is left and listed as stale."""
    deleted: list[Memory] = []
    stamped: list[datetime] = []

    def delete_all(batch: _Writes) -> None:
        stamped.append(batch.now)
        for memory in deleted:
            _delete(memory, actor=actor, now=batch.now)

    done = _change_many(
        mind=mind,
        actor=actor,
        memory_ids=memory_ids,
        expected_versions=expected_versions,
        now=now,
        change=lambda batch, memory: deleted.append(memory),
        then=delete_all,
    )
    batch = Batch(Action.DELETE, stamped[0]) if deleted else None
    return ChangedMany(changed=len(deleted), stale=done.stale, batch=batch)


def memory_retag_many(
    *,
    mind: Mind,
    actor: Actor,
    memory_ids: Sequence[str],
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    expected_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> ChangedMany:
    """Add the tags `add` to, and take the tags `remove` from, the memories of `mind` among
    `memory_ids`, each audited as an update; nothing else changes, verification included
    (re-tagging sorts memories, it does not vouch for them). A person only. Invalid (field
    `tags`) for a tag the rules refuse, for no tag at all, or when a memory would pass the
    tag limit (nothing is written then); other minds' ids match nothing; with
    `expected_versions`, one that changed since is left and listed as stale."""
    adding = memory_body_clean({"tags": list(add)}, actor=actor, partial=True).values["tags"]
    removing = set(
        memory_body_clean({"tags": list(remove)}, actor=actor, partial=True).values["tags"]
    )
    if not adding and not removing:
        raise Invalid.one("tags", "Name a tag to add or to remove.")

    def retag(batch: _Writes, memory: Memory) -> None:
        try:
            tags = clean_tags([t for t in memory.tags if t not in removing] + adding)
        except ValueError as exc:
            raise Invalid.one("tags", f"“{memory.key}”: {exc} Nothing was tagged.") from None
        if tags != memory.tags:
            before = audit.snapshot(memory)
            memory.tags = tags
            batch.changed(memory, before, action=Action.UPDATE)

    return _change_many(
        mind=mind,
        actor=actor,
        memory_ids=memory_ids,
        expected_versions=expected_versions,
        now=now,
        change=retag,
    )


def _change_many(
    *,
    mind: Mind,
    actor: Actor,
    memory_ids: Sequence[str],
    expected_versions: Mapping[str, str] | None,
    now: datetime | None,
    change: Callable[[_Writes, Memory], Any],
    then: Callable[[_Writes], Any] | None = None,
) -> ChangedMany:
    """A person's bulk change: `change` each memory of `mind` among `memory_ids` (in id
    order) that is the version `expected_versions` names (when given) into one batch, under
    the mind's write lock; `then` writes what the batch does not hold (deletes)."""
    _require_person(actor)
    if len(memory_ids) > BULK_MAX_ITEMS:
        raise Invalid.one(
            "memories", f"At most {BULK_MAX_ITEMS} memories per call, got {len(memory_ids)}."
        )
    with _write_lock(mind.pk):
        batch = _Writes(actor=actor, now=now or timezone.now())
        stale: list[Memory] = []
        chosen = Memory.objects.filter(mind=mind, pk__in=set(memory_ids))
        for memory in chosen.order_by("pk"):
            if expected_versions is not None and not is_version(
                memory, expected_versions.get(memory.pk, ())
            ):
                stale.append(memory)
            else:
                change(batch, memory)
        batch.persist()
        if then is not None:
            then(batch)
    actions = {event["action"] for event in batch.events}
    return ChangedMany(
        changed=len(batch.events),
        stale=stale,
        batch=Batch(actions.pop(), batch.now) if len(actions) == 1 else None,
    )


@dataclass
class VerifiedMatching:
    """What memory_verify_matching did: how many memories it verified, how many that
    match it left as they are because they were written after the caller looked, and how
    many it left because they are flagged (with `skip_flagged`)."""

    verified: int
    changed: int
    skipped: int = 0
    batch: Batch | None = None


def memory_verify_matching(
    *,
    mind: Mind,
    actor: Actor,
    seen_at: datetime,
    filters: MemoryFilters = NO_FILTERS,
    q: str | None = None,
    skip_flagged: bool = False,
    now: datetime | None = None,
) -> VerifiedMatching:
    """Verify every unverified memory of `mind` that memory_list(filters, q) lists, on every
    page, in one transaction; each is audited as memory_verify audits it. With
    `skip_flagged`, those flagged as contradicting or nearly repeating another memory
    (hygiene.flags.memory_flags) are left unverified and counted in `skipped`.

    `seen_at` is when the caller looked at what it verifies (from selectors.diff_until, so
    every write stamped before it was in view): a matching memory written after it is left
    as it is and counted in `changed`, since a person verifies what they saw. Invalid when
    `seen_at` lies ahead of now, and (field `q`) for a query memory_list refuses.
    """
    _require_person(actor)
    with _write_lock(mind.pk):
        now = now or timezone.now()
        if seen_at > now:
            raise Invalid.one("seen_at", "May not lie in the future.")
        ids = memory_unverified_matching_ids(mind=mind, filters=filters, q=q, now=now)
        skipped = 0
        if skip_flagged:
            flagged = memory_flags(mind=mind, memory_ids=ids, now=now)
            skipped = len(flagged)
            ids = [i for i in ids if i not in flagged]
        batch = _Writes(actor=actor, now=now)
        changed = 0
        for start in range(0, len(ids), rows.SAME_VALUES_CHUNK):
            chunk = ids[start : start + rows.SAME_VALUES_CHUNK]
            for memory in Memory.objects.filter(mind=mind, pk__in=chunk):
                if memory.updated_at > seen_at:
                    changed += 1
                else:
                    _verify_one(batch, memory, verified=True)
        batch.persist()
    done = len(batch.events)
    return VerifiedMatching(
        verified=done,
        changed=changed,
        skipped=skipped,
        batch=Batch(Action.VERIFY, now) if done else None,
    )


# --- Supersede ----------------------------------------------------------------------------

PROPOSED = (
    "{id} is verified, so it was not superseded: the change is proposed and waits for a "
    "person to accept it (POST /memory/{id}/supersede) or reject it."
)


@dataclass
class Superseded:
    """What memory_supersede did: the memory as it is now, and, when an agent asked to
    supersede a verified memory, the proposal that waits for a person instead."""

    memory: Memory
    proposal: SupersedeProposal | None = None

    @property
    def proposed(self) -> bool:
        return self.proposal is not None


def memory_supersede(
    *,
    memory: Memory,
    by: str | None,
    actor: Actor,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> Superseded:
    """Mark `memory` replaced by the memory of its mind with id `by` (None: current again).

    A superseded memory leaves recall, search and lists (MemoryFilters.superseded) and stays
    in its history, export and diff. An agent asking to supersede a verified memory only
    proposes it: a SupersedeProposal waits for a person, who accepts it by superseding the
    same way (every proposal for the memory then goes) or rejects it (proposal_reject).
    Invalid (field `by`) for an unknown id, the memory itself, or a loop; Stale, and
    nothing written, when it is no longer `expected_version` (when given).
    """
    with _write_lock(memory.mind_id):
        current = _current(memory, expected_version)
        batch = _Writes(actor=actor, now=now or timezone.now())
        proposal = _supersede(batch, current, by)
        batch.persist()
    return Superseded(current, proposal)


def supersede_many(
    *, memories: Sequence[Memory], by: str | None, actor: Actor, now: datetime
) -> None:
    """Supersede each of `memories` (stored, of one mind) by `by`, or make them current
    again (None), each audited: for a write that replaces several at once (compaction, a
    successor about to go), run by its caller under the mind's write lock. The actor's
    proposals rule applies to each."""
    batch = _Writes(actor=actor, now=now)
    for memory in memories:
        _supersede(batch, memory, by)
    batch.persist()


def memory_supersede_into(
    *, mind: Mind, actor: Actor, keep: str, replaced: Mapping[str, str]
) -> list[Memory]:
    """Supersede each memory of `mind` in `replaced` ({id: version the caller read}) by the
    memory `keep`, in one transaction: a person tidying a group of near-repeats into one.
    Stale, and nothing written, when any of them is gone or changed since; Invalid (field
    `keep`) when `keep` is not a memory of the mind or is among them. Returns them."""
    if keep in replaced:
        raise Invalid.one("keep", "The memory kept cannot also be replaced.")
    with _write_lock(mind.pk):
        found = {m.pk: m for m in Memory.objects.filter(mind=mind, pk__in=set(replaced))}
        if set(found) != set(replaced) or not all(
            is_version(found[i], version) for i, version in replaced.items()
        ):
            raise Stale(STALE)
        batch = _Writes(actor=actor, now=timezone.now())
        for memory_id in sorted(found):
            _supersede(batch, found[memory_id], keep, field="keep")
        batch.persist()
    return [found[i] for i in sorted(found)]


def proposal_reject(
    *, mind: Mind, memory_id: str, proposal_id: str, actor: Actor
) -> SupersedeProposal:
    """A person turns down a proposal to supersede a memory of `mind`: it goes, the memory
    stays current. NotFound when there is no such proposal for that memory."""
    if actor.kind != "user":
        raise Forbidden("Only a person can accept or reject a proposed supersede.")
    with _write_lock(mind.pk):
        proposal = SupersedeProposal.objects.filter(
            mind=mind, memory_id=memory_id, pk=proposal_id
        ).first()
        if proposal is None:
            raise NotFound("No such proposal for this memory.")
        proposal.delete()
    return proposal


def _supersede(
    batch: _Writes, memory: Memory, by: str | None, *, field: str = "by"
) -> SupersedeProposal | None:
    """Write (into `batch`) that `memory` is superseded by `by`, or propose it (an agent,
    a verified memory); None when written."""
    if by is not None:
        _check_successor(memory, by, field)
        if batch.actor.kind != "user" and memory.verified:
            proposal, _ = SupersedeProposal.objects.get_or_create(
                memory=memory,
                by_id=by,
                defaults={
                    "mind_id": memory.mind_id,
                    "proposed_by": batch.actor.name[:254],
                    "created_at": batch.now,
                },
            )
            return proposal
        if batch.actor.kind == "user":  # accepted, or decided over whatever was proposed
            SupersedeProposal.objects.filter(memory=memory).delete()
    if memory.superseded_by_id != by:
        before = audit.snapshot(memory)
        memory.superseded_by_id = by
        batch.changed(memory, before, action=Action.SUPERSEDE)
    return None


# How far a chain of supersedes is followed looking for a loop.
MAX_CHAIN = 1000


def _check_successor(memory: Memory, by: str, field: str) -> None:
    if by == memory.pk:
        raise Invalid.one(field, "A memory cannot supersede itself.")
    successor: str | None = by
    for _ in range(MAX_CHAIN):
        # A row (its successor, or None) for a memory of the mind; None for no such memory.
        row = (
            Memory.objects.filter(mind_id=memory.mind_id, pk=successor)
            .values_list("superseded_by_id")
            .first()
        )
        if row is None:
            raise Invalid.one(field, NOT_FOUND)
        if row[0] == memory.pk:
            raise Invalid.one(
                field, f"{by} is itself superseded by this memory (directly or in a chain)."
            )
        if row[0] is None:
            return
        successor = row[0]


def _unsupersede_by(memory: Memory, *, actor: Actor, now: datetime) -> None:
    """Make the memories `memory` superseded current again, audited: it is about to go."""
    replaced = list(Memory.objects.filter(mind_id=memory.mind_id, superseded_by=memory))
    if replaced:
        supersede_many(memories=replaced, by=None, actor=actor, now=now)


# How long a person may undo a verify or a delete of theirs (memory_undo), or a bulk write
# (memory_undo_batch).
UNDO_WINDOW = timedelta(minutes=10)
UNDOABLE = (Action.VERIFY, Action.DELETE)
# What a bulk write of a person may be (memory_verify_many, memory_verify_matching,
# memory_unverify_many, memory_delete_many, memory_retag_many), undone as one.
BATCH_UNDOABLE = (Action.VERIFY, Action.UNVERIFY, Action.DELETE, Action.UPDATE)


@dataclass
class Undone:
    """What memory_undo did: the action it undid, and the memory as it is now (a deleted
    memory is back under its own id)."""

    action: str
    memory: Memory


def memory_undo(
    *, mind: Mind, actor: Actor, memory_id: str, action: str, now: datetime | None = None
) -> Undone:
    """Undo this person's latest `action` ("verify" or "delete") on a memory of `mind`, up to
    UNDO_WINDOW after it: a verify is unverified; a deleted memory is put back under its own
    id with every value its delete recorded (source, verification and created_at included),
    audited as an `undelete` that continues its history.

    NotFound when the person did no such thing to that memory of this mind; Conflict when
    it is older than UNDO_WINDOW; Stale, and nothing written, when anything was written
    since to the memory, or (after a delete) to a memory with its category and key, undo
    included: only a change nobody has built on is taken back.
    """
    if actor.kind != "user":
        raise Forbidden("Only a person can undo a verify or a delete.")
    if action not in UNDOABLE:
        raise Invalid.one("action", f"Only {' or '.join(UNDOABLE)} can be undone.")
    with _write_lock(mind.pk):
        now = now or timezone.now()
        events = MemoryEvent.objects.filter(mind=mind, memory_id=memory_id).order_by("-at", "-id")
        done = events.filter(action=action, actor=actor.name[:254], actor_type="user").first()
        if done is None:
            raise NotFound(f"You did not {action} that memory of this mind: nothing to undo.")
        _refuse_late(done.at, now=now, what=f"That {action}")
        if events.first() != done or (action == Action.DELETE and not _undeletable([done])):
            if action == Action.VERIFY:
                raise Stale(f"“{done.key}” changed since you verified it: it was left as it is.")
            raise Stale(
                f"A memory “{done.key}” was stored since you deleted it (or it was put back "
                "already): nothing was put back."
            )
        batch = _Writes(actor=actor, now=now)
        if action == Action.VERIFY:
            # Its latest event is the verify: it is there, verified by this person.
            current = Memory.objects.get(mind=mind, pk=memory_id)
            if current.verified:
                _mark_verified(batch, current, verified=False)
        else:
            if _holds_no_values(done):
                raise Conflict(
                    f"The values “{done.key}” had when you deleted it were folded to keep this "
                    "mind's history within its budget (SYNAPSE_MAX_HISTORY_BYTES): nothing "
                    "was put back."
                )
            current = _undelete(batch, done)
        batch.persist()
    return Undone(action, current)


@dataclass
class UndoneBatch:
    """What memory_undo_batch did: the action it undid, the memories it took back (as they
    are now, in id order), and how many of the batch it left as they are because they
    changed since (or, deleted, a memory with their key was stored since, or their values
    were folded)."""

    action: str
    undone: list[Memory]
    left: int

    @property
    def total(self) -> int:
        return len(self.undone) + self.left


def memory_undo_batch(
    *, mind: Mind, actor: Actor, batch: Batch, now: datetime | None = None
) -> UndoneBatch:
    """Take back a bulk write of this person on `mind` (the `batch` its service answered),
    up to UNDO_WINDOW after it, in one transaction: verified ones are unverified, unverified
    ones verified again as they were, deleted ones put back under their own ids (as
    memory_undo does), re-tagged ones given their tags back. Each is audited.

    A memory written since (by anyone, this undo included), or, for a delete, whose
    category and key a memory was stored under since, is left as it is and counted in
    `left`: the rest is undone all the same. Forbidden for anyone but a person; Invalid for
    an action no bulk write makes; NotFound when this person wrote no such batch on this
    mind (another mind's batch included); Conflict when it is older than UNDO_WINDOW or a
    quota refuses what it would put back; Stale, and nothing written, when every memory of
    it changed since.
    """
    if actor.kind != "user":
        raise Forbidden("Only a person can undo what a person did.")
    if batch.action not in BATCH_UNDOABLE:
        raise Invalid.one("action", f"Only {', '.join(BATCH_UNDOABLE)} can be undone.")
    with _write_lock(mind.pk):
        now = now or timezone.now()
        done = list(
            MemoryEvent.objects.filter(
                mind=mind,
                action=batch.action,
                at=batch.at,
                actor=actor.name[:254],
                actor_type="user",
            ).order_by("memory_id", "id")
        )
        if not done:
            raise NotFound(
                f"You did not {batch.action} those memories of this mind: nothing to undo."
            )
        _refuse_late(batch.at, now=now, what="That change")
        writes = _Writes(actor=actor, now=now)
        undone: list[Memory] = []
        if batch.action == Action.DELETE:
            for event in _undeletable(done):
                if not _holds_no_values(event):
                    undone.append(_undelete(writes, event))
        else:
            current = {m.pk: m for m in _unchanged_since(mind, done)}
            for event in done:
                memory = current.get(event.memory_id)
                if memory is not None and not _holds_no_values(event):
                    _revert(writes, memory, event)
                    undone.append(memory)
        if not undone:
            raise Stale(
                f"Every one of the {len(done):,} memories changed since (or was put back "
                "already): nothing was undone."
            )
        writes.persist()
    return UndoneBatch(batch.action, undone, left=len(done) - len(undone))


def _refuse_late(at: datetime, *, now: datetime, what: str) -> None:
    if now - at > UNDO_WINDOW:
        minutes = int(UNDO_WINDOW.total_seconds() // 60)
        raise Conflict(
            f"{what} is more than {minutes} minutes old, so it can no longer be undone from "
            "here; change the memory itself instead."
        )


def _holds_no_values(event: MemoryEvent) -> bool:
    return any(audit.holds_no_values(change) for change in event.changes.values())


def _unchanged_since(mind: Mind, done: list[MemoryEvent]) -> list[Memory]:
    """The memories of `done` (one row each, of one write) that nothing was written to
    since."""
    by_memory = {event.memory_id: event for event in done}
    ids = sorted(by_memory)
    unchanged: list[Memory] = []
    for start in range(0, len(ids), rows.SAME_VALUES_CHUNK):
        chunk = ids[start : start + rows.SAME_VALUES_CHUNK]
        written = MemoryEvent.objects.filter(mind=mind, memory_id__in=chunk, at__gte=done[0].at)
        later = {
            memory_id
            for memory_id, at, pk in written.values_list("memory_id", "at", "pk")
            if (at, pk) > (by_memory[memory_id].at, by_memory[memory_id].pk)
        }
        unchanged += Memory.objects.filter(mind=mind, pk__in=set(chunk) - later).order_by("pk")
    return unchanged


def _undeletable(deletes: list[MemoryEvent]) -> list[MemoryEvent]:
    """The delete rows whose memory can be put back as it was: no memory holds its id or its
    category and key now, and none was stored under them since."""
    mind_id = deletes[0].mind_id
    keys = {event.key for event in deletes}
    ids = {event.memory_id for event in deletes}
    taken = set(Memory.objects.filter(mind_id=mind_id, key__in=keys).values_list("category", "key"))
    present = set(Memory.objects.filter(pk__in=ids).values_list("pk", flat=True))
    # The latest row written under each category and key since the first of these deletes.
    latest: dict[tuple[str, str], tuple[datetime, int]] = {}
    for category, key, at, pk in MemoryEvent.objects.filter(
        mind_id=mind_id, key__in=keys, at__gte=min(event.at for event in deletes)
    ).values_list("category", "key", "at", "pk"):
        latest[(category, key)] = max(latest.get((category, key), (at, pk)), (at, pk))
    return [
        event
        for event in deletes
        if event.memory_id not in present
        and (event.category, event.key) not in taken
        and latest.get((event.category, event.key), (event.at, event.pk)) <= (event.at, event.pk)
    ]


def _undelete(batch: _Writes, deleted: MemoryEvent) -> Memory:
    """Put the memory a delete row recorded back into `batch`: its own id, every value the
    row holds, updated now."""
    values = {name: change.get("old") for name, change in deleted.changes.items()}
    memory = memory_from_values(values, memory_id=deleted.memory_id, mind_id=deleted.mind_id)
    successor = memory.superseded_by_id
    if successor and not Memory.objects.filter(mind_id=memory.mind_id, pk=successor).exists():
        memory.superseded_by_id = None  # it went too: current again, as its delete made it
    memory.updated_at = batch.now
    batch.created(memory, action=Action.UNDELETE)
    return memory


def _revert(batch: _Writes, memory: Memory, event: MemoryEvent) -> None:
    """Write (into `batch`) the values `event` replaced back into `memory`."""
    before = audit.snapshot(memory)
    for name, change in event.changes.items():
        public = FIELDS_BY_NAME[name]
        setattr(memory, public.attribute, public.decode(change.get("old")))
    taken_back: dict[str, str] = {Action.VERIFY: Action.UNVERIFY, Action.UNVERIFY: Action.VERIFY}
    batch.changed(memory, before, action=taken_back.get(event.action, Action.UPDATE))


@dataclass
class Restored:
    """What memory_restore did: the version it put back, and the memory as it is now
    (`changed` False when that version is what the memory holds: nothing was written)."""

    entry: audit.HistoryEntry
    memory: Memory
    changed: bool


def memory_restore(
    *,
    memory: Memory,
    actor: Actor,
    event_id: int,
    expected_version: Expected = None,
    now: datetime | None = None,
) -> Restored:
    """Put back the memory's fields as they were right after its audit row `event_id` (a
    version of its history, audit.memory_history), as an edit by `actor`.

    NotFound for a row that is not this memory's; Conflict, and nothing written, when a
    value that version needs was folded (the history budget); otherwise as memory_change
    (Stale when the memory is no longer `expected_version`, Conflict on a key clash...).
    """
    entry = audit.memory_history_entry(memory=memory, event_id=event_id)
    if entry.purged:
        raise Conflict(
            f"Version {entry.number} can no longer be restored: its {', '.join(entry.purged)} "
            f"{'was' if len(entry.purged) == 1 else 'were'} purged. Nothing was written."
        )
    if entry.folded:
        raise Conflict(
            f"Version {entry.number} can no longer be restored: its {', '.join(entry.folded)} "
            f"{'was' if len(entry.folded) == 1 else 'were'} folded to keep this mind's history "
            "within its budget (SYNAPSE_MAX_HISTORY_BYTES). Nothing was written."
        )
    if not entry.restorable:
        return Restored(entry, memory, changed=False)
    result = memory_change(
        memory=memory,
        actor=actor,
        body=entry.restorable,
        expected_version=expected_version,
        now=now,
    )
    return Restored(entry, result.memory, changed=result.changed)


def _require_person(actor: Actor) -> None:
    if actor.kind != "user":
        raise Forbidden("Only a person can verify or unverify a memory.")


def _verify_one(batch: _Writes, memory: Memory, *, verified: bool) -> None:
    """Verify (or unverify) `memory` into `batch` unless it already is."""
    if memory.verified != verified:
        _mark_verified(batch, memory, verified=verified)


def _mark_verified(batch: _Writes, memory: Memory, *, verified: bool) -> None:
    before = audit.snapshot(memory)
    memory.verified = verified
    memory.verified_by = batch.actor.name if verified else ""
    memory.verified_at = batch.now if verified else None
    batch.changed(memory, before, action=Action.VERIFY if verified else Action.UNVERIFY)


def _set_verification(
    *,
    memory: Memory,
    actor: Actor,
    verified: bool,
    expected_version: Expected,
    now: datetime | None,
) -> Memory:
    _require_person(actor)
    with _write_lock(memory.mind_id):
        current = _current(memory, expected_version)
        now = now or timezone.now()
        if current.verified != verified:
            batch = _Writes(actor=actor, now=now)
            _mark_verified(batch, current, verified=verified)
            batch.persist()
    return current


def _current(memory: Memory, expected_version: Expected = None) -> Memory:
    """The memory as stored now (under the write lock); NotFound when it is gone, Stale when
    it is not `expected_version` (when given)."""
    current = Memory.objects.filter(mind_id=memory.mind_id, pk=memory.pk).first()
    if current is None:
        raise NotFound(NOT_FOUND)
    if not is_version(current, expected_version):
        raise Stale(STALE)
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


def _charge(mind_id: str, *, memories: int, size: int, history: int = 0) -> int:
    """Add to the mind's usage counters, under its write lock, and return its history_bytes
    after. A write that would grow the mind past a quota (SYNAPSE_MAX_MEMORIES_PER_MIND,
    SYNAPSE_MAX_MIND_BYTES) is refused with QuotaExceeded, in the same statement; shrinking
    is never refused, so a mind over its quota can still delete, and update to something no
    larger.

    `history`, the bytes of the write's audit rows, is never refused: once they are written,
    the write folds what the mind holds past its budget (audit.history_fold)."""
    quote = connection.ops.quote_name
    # Raw: every write runs this, and an ORM update compiles slower than it runs.
    sql = (
        f"UPDATE {quote(Mind._meta.db_table)} SET stored_memories = stored_memories + %s, "
        "stored_bytes = stored_bytes + %s, history_bytes = history_bytes + %s WHERE id = %s"
    )
    params: list[Any] = [memories, size, history, mind_id]
    limits = quotas()
    if memories > 0 and limits["memories"]:
        sql += " AND stored_memories + %s <= %s"
        params += [memories, limits["memories"]]
    if size > 0 and limits["bytes"]:
        sql += " AND stored_bytes + %s <= %s"
        params += [size, limits["bytes"]]
    with connection.cursor() as cursor:
        cursor.execute(sql + " RETURNING history_bytes", params)
        held = cursor.fetchone()
    if held is None:
        raise _over_quota(mind_id, memories=memories, size=size)
    return int(held[0])


def storage_charge(mind_id: str, *, size: int) -> None:
    """Charge `size` bytes (negative: give them back) of what the mind holds beside its
    memories (the scheduler's variables) to the same counter and quota as memories' content,
    under the same lock: QuotaExceeded past SYNAPSE_MAX_MIND_BYTES."""
    _charge(mind_id, memories=0, size=size)


def _over_quota(mind_id: str, *, memories: int, size: int) -> CoreError:
    """The refusal of a write that would take the mind past a quota, naming it."""
    held = Mind.objects.filter(pk=mind_id).values_list("stored_memories", "stored_bytes").first()
    if held is None:
        return NotFound("This mind no longer exists.")
    count, used = held
    limits = quotas()
    if memories > 0 and limits["memories"] and count + memories > limits["memories"]:
        return QuotaExceeded(
            f"This mind holds {count:,} memories and may hold at most "
            f"{limits['memories']:,} (SYNAPSE_MAX_MEMORIES_PER_MIND); this write would add "
            f"{memories:,}. Nothing was written: delete memories it no longer needs first."
        )
    return QuotaExceeded(
        f"This mind holds {used:,} bytes of content (memories and variables) and may hold "
        f"at most {limits['bytes']:,} (SYNAPSE_MAX_MIND_BYTES); this write would add "
        f"{size:,}. Nothing was written: delete or shorten what it no longer needs first."
    )


@contextmanager
def _write_lock(mind_id: str) -> Iterator[None]:
    """A transaction in which this mind's writers take turns."""
    with transaction.atomic():
        Mind.objects.lock(mind_id)
        yield


# --- Planning and writing -----------------------------------------------------------------


def _apply(
    memory: Memory,
    write: MemoryWrite,
    *,
    actor: Actor,
    before: dict[str, Any] | None,
    now: datetime,
) -> None:
    """Apply a judged write plus the source and verification rules to `memory` (unsaved).

    `before` is the memory's audit snapshot before the write, None for a new memory.
    """
    values = write.values
    creating = before is None
    content_changed = "content" in values and values["content"] != memory.content
    for name, value in values.items():
        setattr(memory, name, value)

    source = write.source or SOURCE_POLICY[actor.kind][0]
    source_changed = False
    # The source names who wrote the current text: it follows a content change or an
    # explicit (allowed) request, never a tag or priority edit.
    if creating or content_changed or write.source is not None:
        source_changed = memory.source != source
        memory.source = source
    if "confidence" not in values and (creating or source_changed):
        memory.confidence = DEFAULT_CONFIDENCE[memory.source]

    edited = creating or before != audit.snapshot(memory)
    if actor.kind == "user":
        # A person editing it vouches for it (a store that changes nothing verifies nothing).
        if edited and (creating or content_changed or not memory.verified):
            memory.verified, memory.verified_by, memory.verified_at = True, actor.name, now
    elif content_changed and memory.verified:
        # A person confirmed the old text, not this one.
        memory.verified, memory.verified_by, memory.verified_at = False, "", None

    provenance = write.provenance
    if provenance is not None:  # a person restoring an export: as it was recorded
        memory.source = provenance.source
        if "confidence" not in values and (creating or source_changed):
            memory.confidence = DEFAULT_CONFIDENCE[memory.source]
        if provenance.verified:
            memory.verified = True
            memory.verified_by = provenance.verified_by or actor.name
            memory.verified_at = provenance.verified_at or now
        else:
            memory.verified, memory.verified_by, memory.verified_at = False, "", None


class _Writes:
    """The changes of one transaction, written by `persist` in one go: new memories with
    their tag rows, changed memories (by set of changed columns), and one audit row each."""

    def __init__(self, *, actor: Actor, now: datetime) -> None:
        self.actor = actor
        self.now = now
        self.new: dict[str, Memory] = {}
        # A stored memory that changed, by id, with the columns to write.
        self.stored: dict[str, tuple[Memory, set[str]]] = {}
        self.events: list[dict[str, Any]] = []
        self.events_of: list[Memory] = []  # the memory of each event
        # What the writes add to each mind's usage: [memories, content bytes, history bytes].
        self.usage: dict[str, list[int]] = {}

    def created(self, memory: Memory, *, action: str = Action.CREATE) -> None:
        self.new[memory.pk] = memory
        self._use(memory.mind_id, 1, content_bytes(memory.content))
        self._event(memory, action, audit.created_changes(memory))

    def updated(self, memory: Memory, write: MemoryWrite) -> bool:
        """Apply `write` to a stored (or just created) memory; False when nothing changed."""
        before = audit.snapshot(memory)
        _apply(memory, write, actor=self.actor, before=before, now=self.now)
        return self.changed(memory, before, action=Action.UPDATE)

    def changed(self, memory: Memory, before: dict[str, Any], *, action: str) -> bool:
        changes = audit.changes_between(before, audit.snapshot(memory))
        if not changes:
            return False
        memory.updated_at = self.now
        if memory.pk not in self.new:
            self.stored.setdefault(memory.pk, (memory, {"updated_at"}))[1].update(changes)
        if "content" in changes:
            old, new = changes["content"]["old"], changes["content"]["new"]
            self._use(memory.mind_id, 0, content_bytes(new) - content_bytes(old))
        self._event(memory, action, changes)
        return True

    def new_content(self) -> list[Memory]:
        """The memories whose content this transaction writes: new ones, and changed text."""
        changed = [m for m, columns in self.stored.values() if "content" in columns]
        return [*self.new.values(), *changed]

    def _use(self, mind_id: str, memories: int, size: int, history: int = 0) -> None:
        usage = self.usage.setdefault(mind_id, [0, 0, 0])
        usage[0] += memories
        usage[1] += size
        usage[2] += history

    def _event(self, memory: Memory, action: str, changes: audit.Changes) -> None:
        event = audit.event_row(
            memory=memory, actor=self.actor, action=action, changes=changes, now=self.now
        )
        self.events.append(event)
        self.events_of.append(memory)
        self._use(memory.mind_id, 0, 0, event["size"])

    def persist(self) -> None:
        # First, so a write past a quota is refused before anything is written.
        held = {
            mind_id: _charge(mind_id, memories=count, size=size, history=history)
            for mind_id, (count, size, history) in self.usage.items()
        }
        new = list(self.new.values())
        rows.insert(Memory, [memory.__dict__ for memory in new])
        by_columns: dict[tuple[str, ...], list[Memory]] = {}
        for memory, columns in self.stored.values():
            by_columns.setdefault(tuple(sorted(columns)), []).append(memory)
        for names, memories in by_columns.items():
            first = [getattr(memories[0], name) for name in names]
            if len(memories) > 1 and all([getattr(m, n) for n in names] == first for m in memories):
                rows.update_same(Memory, memories, names)  # verifications: one value for all
            else:
                rows.update(Memory, memories, names)
        retagged = [memory for memory, columns in self.stored.values() if "tags" in columns]
        if retagged:
            MemoryTag.objects.filter(memory_id__in=[m.pk for m in retagged]).delete()
        rows.insert(
            MemoryTag,
            [
                {"memory_id": m.pk, "mind_id": m.mind_id, "tag": tag}
                for m in (*new, *retagged)
                for tag in m.tags
            ],
        )
        rows.insert(MemoryEvent, self.events)
        _changed(list(zip(self.events_of, self.events, strict=True)))
        for mind_id, history_bytes in held.items():
            audit.history_fold(mind_id, held=history_bytes)
        outbox.written(
            created=new,
            changed=[m for m, columns in self.stored.values() if columns & EMBEDDED_FIELDS],
        )
