"""Compaction: old, unverified agent memories gathered into clusters by their tags and
meaning, each cluster written as one summary memory that supersedes its originals.

Nothing is deleted: a superseded original leaves recall, search and lists and stays in the
database, and `compact_undo` brings every original of a cluster back. Verified and critical
memories are never candidates. Design notes: docs/internals.md#compaction.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db.models import Count
from django.utils import timezone

from core.errors import Conflict, Invalid, NotFound, Stale
from memories import services
from memories.actors import Actor
from memories.embeddings import EmbeddingsError, get_embedder
from memories.fields import CATEGORIES
from memories.hygiene.contradictions import judge
from memories.models import (
    MAX_CONTENT_LENGTH,
    MAX_KEY_LENGTH,
    MAX_TAGS,
    Memory,
    MemoryVector,
    Priority,
    Source,
    live_q,
)
from memories.rules import DURATION_FORMS, MAX_DURATION, memory_body_clean, parse_duration
from memories.search.baseline import reference_vectors
from memories.versions import memory_version
from minds.models import Mind

# The client's defaults and bounds.
OLDER_THAN_DEFAULT = timedelta(days=30)
MAX_CLUSTERS_DEFAULT, MAX_CLUSTERS_RANGE = 10, (1, 50)
MIN_CLUSTER_SIZE_DEFAULT, MIN_CLUSTER_SIZE_RANGE = 3, (2, 20)
BODY_FIELDS = ("older_than", "dry_run", "max_clusters", "min_cluster_size", "category")

# The oldest candidates one call looks at: the pairwise measures below are n², so a large
# mind is compacted over several calls, oldest first.
MAX_CANDIDATES = 1000
# A summary of more would read as a dump, not a summary.
MAX_CLUSTER_SIZE = 50
# Two memories are linked (may share a cluster) when their tags overlap this much (Jaccard),
# their words this much, or their meaning stands this many spreads above unrelated text;
# where both have a vector, an overlap of tags or words also needs a standing of
# MEANING_AGREES (a shared tag like "work" alone does not make two memories one subject).
# Standings as semantic.Standing reads them; measured on both bundled models: see
# docs/internals.md#compaction.
TAG_LINK = 0.5
WORD_LINK = 0.35
MEANING_LINK = 3.5
MEANING_AGREES = 2.5
LEAST_SPREAD = 0.01
# Words of a memory the word overlap is measured on (its key's and its content's first).
WORDS_READ = 200
CONTENT_READ = 4000

SUMMARY_TAG = "compacted"
SUMMARY_CONFIDENCE = 0.7
SYSTEM_NAME = "compaction"
# Two statements are one when their words overlap this much (Jaccard).
NEAR_REPEAT = 0.8
# Words too common to tell two memories' subjects apart.
_STOP_TEXT = (
    "the and for with that this are was were has have had not but from into over under "
    "about than then them they their there its it's his her she him our you your who what "
    "when where which will would can could should may might also very just only some any "
    "all each more most other such same own out off too der die das und ist nicht mit"
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())
_WORD = re.compile(r"\w+")
# Sentence ends, the full-width ones of CJK text too.
_SENTENCE_END = re.compile("(?<=[.!?\u3002\uff01\uff1f])\\s+")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,3}[.)])\s+")
_KEY_UNSAFE = re.compile(r"[^\w.-]+")


# --- The request -------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactRequest:
    """A compaction's parameters, judged (compact_request_clean)."""

    older_than: timedelta = OLDER_THAN_DEFAULT
    dry_run: bool = False
    max_clusters: int = MAX_CLUSTERS_DEFAULT
    min_cluster_size: int = MIN_CLUSTER_SIZE_DEFAULT
    category: str | None = None


def compact_request_clean(body: Any) -> CompactRequest:
    """Judge a compaction body (the client's `{older_than, dry_run, max_clusters,
    min_cluster_size, category?}`, every field optional): the request, or Invalid naming
    every field at fault."""
    if body is None:
        body = {}
    if not isinstance(body, Mapping):
        raise Invalid.one("non_field_errors", "Must be a JSON object.")
    errors: dict[str, list[str]] = {}
    for name in body:
        if name not in BODY_FIELDS:
            errors[str(name)[:100]] = [f"Unknown field; this body takes {', '.join(BODY_FIELDS)}."]
    older_than = OLDER_THAN_DEFAULT
    raw = body.get("older_than")
    if raw is not None:
        try:
            older_than = _older_than(raw)
        except ValueError as exc:
            errors["older_than"] = [str(exc)]
    dry_run = body.get("dry_run", False)
    if dry_run is None:
        dry_run = False
    if not isinstance(dry_run, bool):
        errors["dry_run"] = ["Must be true or false."]
    counts = {}
    for name, default, (low, high) in (
        ("max_clusters", MAX_CLUSTERS_DEFAULT, MAX_CLUSTERS_RANGE),
        ("min_cluster_size", MIN_CLUSTER_SIZE_DEFAULT, MIN_CLUSTER_SIZE_RANGE),
    ):
        value = body.get(name)
        if value is None:
            counts[name] = default
        elif isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            errors[name] = [f"Must be a whole number from {low} to {high}, got {value!r:.50}."]
        else:
            counts[name] = value
    category = body.get("category")
    if category is not None and category not in CATEGORIES:
        errors["category"] = [f"Must be one of: {', '.join(CATEGORIES)}; got {category!r:.50}."]
    if errors:
        raise Invalid(errors)
    return CompactRequest(
        older_than=older_than,
        dry_run=bool(dry_run),
        max_clusters=counts["max_clusters"],
        min_cluster_size=counts["min_cluster_size"],
        category=category,
    )


def _older_than(raw: Any) -> timedelta:
    """Seconds (the client sends a number, 0 for "any age") or a duration like 30d."""
    hint = f"Must be {DURATION_FORMS}, or 0 for memories of any age (at most 100 years)"
    if isinstance(raw, bool):
        raise ValueError(f"{hint}.")
    if isinstance(raw, int | float):
        if not (math.isfinite(raw) and 0 <= raw <= MAX_DURATION.total_seconds()):
            raise ValueError(f"{hint}; got {raw!r:.50}.")
        return timedelta(seconds=int(raw))
    if isinstance(raw, str) and raw.strip() == "0":
        return timedelta(0)
    try:
        return parse_duration(raw)
    except ValueError:
        raise ValueError(f"{hint}; got {raw!r:.50}.") from None


# --- Candidates and clusters ---------------------------------------------------------------


@dataclass
class Cluster:
    """Memories of one category to be summarised together, oldest first; `coherence` is the
    share of their pairs that are linked."""

    category: str
    members: list[Memory]
    coherence: float


def compact_candidates(
    *, mind: Mind, older_than: timedelta, category: str | None, now: datetime
) -> list[Memory]:
    """The memories compaction may touch, oldest first (at most MAX_CANDIDATES): live, not
    superseded, unverified, written by an agent or a tool, not critical, not updated within
    `older_than` of `now`, of `category` when given."""
    chosen = Memory.objects.filter(
        live_q(now),
        mind=mind,
        superseded_by__isnull=True,
        verified=False,
        source__in=[Source.AGENT, Source.TOOL],
        priority__lt=Priority.CRITICAL,
        updated_at__lte=now - older_than,
    )
    if category is not None:
        chosen = chosen.filter(category=category)
    return list(chosen.order_by("updated_at", "id")[:MAX_CANDIDATES])


def compact_plan(
    *,
    mind: Mind,
    older_than: timedelta = OLDER_THAN_DEFAULT,
    category: str | None = None,
    max_clusters: int = MAX_CLUSTERS_DEFAULT,
    min_cluster_size: int = MIN_CLUSTER_SIZE_DEFAULT,
    now: datetime | None = None,
) -> list[Cluster]:
    """The clusters compaction would summarise now, largest and most coherent first: at
    most `max_clusters`, each of `min_cluster_size` to MAX_CLUSTER_SIZE memories of one
    category. Reads only; nothing is written."""
    now = now or timezone.now()
    candidates = compact_candidates(mind=mind, older_than=older_than, category=category, now=now)
    if len(candidates) < min_cluster_size:
        return []
    links = _links(mind, candidates)
    clusters = _grow_clusters(candidates, links, min_cluster_size)
    clusters.sort(key=lambda c: (-len(c.members), -c.coherence, c.members[0].updated_at))
    return clusters[:max_clusters]


def _links(mind: Mind, memories: list[Memory]) -> npt.NDArray[np.bool_]:
    """Which pairs may share a cluster: same category, and close by tags, words or meaning."""
    categories = np.array([m.category for m in memories])
    same = categories[:, None] == categories[None, :]
    tags = _jaccard([set(m.tags) for m in memories])
    words = _jaccard([_words(f"{m.key} {m.content[:CONTENT_READ]}") for m in memories])
    overlap = (tags >= TAG_LINK) | (words >= WORD_LINK)
    standing, has_vector = _meaning(mind, memories)
    both = has_vector[:, None] & has_vector[None, :]
    linked = np.where(
        both, (standing >= MEANING_LINK) | (overlap & (standing >= MEANING_AGREES)), overlap
    )
    linked &= same
    np.fill_diagonal(linked, False)
    # Two memories that state different values about one thing are a contradiction for a
    # person to settle (the Hygiene page), never one summary holding both.
    for i, j in zip(*np.nonzero(np.triu(linked)), strict=True):
        if judge(memories[i], memories[j]) is not None:
            linked[i, j] = linked[j, i] = False
    return linked


def _words(text: str) -> set[str]:
    found: dict[str, None] = {}
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold().replace("_", " ")):
        if len(word) >= 3 and word not in _STOP_WORDS and not word.isdigit():
            found[word] = None
            if len(found) >= WORDS_READ:
                break
    return set(found)


def _jaccard(sets: list[set[str]]) -> npt.NDArray[np.float32]:
    """Each pair's Jaccard index (0 where both are empty), from one product of 0/1 rows
    over the items at least two of the sets hold (the others only count in the sizes)."""
    counts = Counter(item for s in sets for item in s)
    shared = {item: col for col, item in enumerate(i for i, c in counts.items() if c > 1)}
    rows = np.zeros((len(sets), len(shared)), dtype=np.float32)
    for row, s in enumerate(sets):
        for item in s:
            col = shared.get(item)
            if col is not None:
                rows[row, col] = 1.0
    inter = rows @ rows.T
    sizes = np.array([len(s) for s in sets], dtype=np.float32)
    union = sizes[:, None] + sizes[None, :] - inter
    result: npt.NDArray[np.float32] = np.divide(
        inter, union, out=np.zeros_like(inter), where=union > 0
    )
    return result


def _meaning(mind: Mind, memories: list[Memory]) -> tuple[npt.NDArray[np.float64], Any]:
    """Each pair's cosine as a standing above unrelated text, and which memories have a
    vector of the current model (none with embeddings off)."""
    n = len(memories)
    standing = np.zeros((n, n))
    has_vector = np.zeros(n, dtype=bool)
    try:
        embedder = get_embedder()
    except EmbeddingsError:
        embedder = None  # the model cannot load: compact by tags and words alone
    if embedder is None:
        return standing, has_vector
    rows = dict(
        MemoryVector.objects.filter(
            mind=mind, model=embedder.model, memory_id__in=[m.pk for m in memories]
        ).values_list("memory_id", "vector")
    )
    blobs = {memory_id: bytes(blob) for memory_id, blob in rows.items()}
    if len(blobs) < 2:
        return standing, has_vector
    # Vectors of one length only: the model's (a model resized under one name is re-embedded).
    size = Counter(len(b) for b in blobs.values()).most_common(1)[0][0]
    at = [i for i, m in enumerate(memories) if len(blobs.get(m.pk, b"")) == size]
    matrix = np.frombuffer(b"".join(blobs[memories[i].pk] for i in at), dtype=np.float32)
    matrix = matrix.reshape(len(at), -1).astype(np.float64)
    cosines = matrix @ matrix.T
    mean, spread = _unrelated(embedder, cosines)
    index = np.array(at)
    standing[np.ix_(index, index)] = (cosines - mean) / spread
    has_vector[index] = True
    return standing, has_vector


def _unrelated(embedder: Any, cosines: npt.NDArray[Any]) -> tuple[float, float]:
    """The mean and spread of the model's cosines between unrelated texts: the reference
    texts' with each other where the model runs in this process, else the candidates' own
    (mostly unrelated in a mind of many subjects; coarser)."""
    sample = cosines
    if getattr(embedder, "in_process", False):
        try:
            reference = np.asarray(reference_vectors(embedder), dtype=np.float64)
            sample = reference @ reference.T
        except EmbeddingsError:
            pass
    pairs = sample[np.triu_indices(len(sample), 1)]
    if not len(pairs):
        return 0.0, 1.0
    return float(pairs.mean()), max(float(pairs.std()), LEAST_SPREAD)


def _grow_clusters(
    memories: list[Memory], links: npt.NDArray[np.bool_], min_size: int
) -> list[Cluster]:
    """Greedy clusters: the free memory with the most free links seeds one; its neighbours
    join, the most connected first, each if linked to at least half of those already in.
    Every cluster is one category (links never cross one)."""
    free = np.ones(len(memories), dtype=bool)
    blocked = np.zeros(len(memories), dtype=bool)  # seeded a cluster too small
    clusters: list[Cluster] = []
    while True:
        live = links & free[None, :] & free[:, None]
        degree = live.sum(axis=1)
        degree[~free | blocked] = -1
        seed = int(np.argmax(degree))  # ties: the oldest (candidates are oldest first)
        if degree[seed] + 1 < min_size:
            break
        neighbours = np.flatnonzero(live[seed])
        within = live[np.ix_(neighbours, neighbours)].sum(axis=1)
        order = neighbours[np.lexsort((neighbours, -within))]
        members = [seed]
        for candidate in order.tolist():
            if len(members) >= MAX_CLUSTER_SIZE:
                break
            if 2 * int(links[candidate, members].sum()) >= len(members):
                members.append(candidate)
        if len(members) < min_size:
            blocked[seed] = True
            continue
        members.sort()
        inner = links[np.ix_(members, members)]
        pairs = len(members) * (len(members) - 1)
        coherence = float(inner.sum()) / pairs if pairs else 1.0
        chosen = [memories[i] for i in members]
        clusters.append(Cluster(chosen[0].category, chosen, coherence))
        free[members] = False
    return clusters


# --- The summary ---------------------------------------------------------------------------


def statements(content: str) -> list[str]:
    """The content's statements: its lines, split at sentence ends, bullets taken off."""
    found = []
    for line in content.splitlines():
        line = _BULLET.sub("", line)
        for part in _SENTENCE_END.split(line):
            text = " ".join(part.split())
            if _statement_words(text):
                found.append(text)
    return found


def _statement_words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(unicodedata.normalize("NFKC", text).casefold()))


def distinct_statements(contents: Sequence[str]) -> list[str]:
    """Every statement of the contents once, in order: a statement whose words another
    holds (or nearly repeat them) is dropped, and a longer one takes a shorter one's place."""
    kept: list[tuple[str, frozenset[str]]] = []
    for content in contents:
        for text in statements(content):
            words = _statement_words(text)
            for n, (_, seen) in enumerate(kept):
                if words <= seen or len(words & seen) >= NEAR_REPEAT * len(words | seen):
                    break
                if seen < words:
                    kept[n] = (text, words)
                    break
            else:
                kept.append((text, words))
    return list(dict.fromkeys(text for text, _ in kept))


def summary_text(cluster: Cluster, *, now: datetime) -> str:
    """One readable text of the originals' distinct statements, oldest first, within the
    content limit (what does not fit is counted on a last line)."""
    header = f"Summary of {len(cluster.members)} memories (compacted {now:%Y-%m-%d}):"
    lines = [f"- {text}" for text in distinct_statements([m.content for m in cluster.members])]
    room = MAX_CONTENT_LENGTH - len(header) - 100  # the last line's place
    text = header
    for n, line in enumerate(lines):
        if len(text) + 1 + len(line) > room:
            if n == 0:  # one statement longer than a memory holds: its start
                text += "\n" + line[: room - len(text) - 2] + "…"
                n = 1
            left = len(lines) - n
            if left:
                text += f"\n- … and {left} more statements: see the original memories."
            return text
        text += "\n" + line
    return text


def summary_body(cluster: Cluster, *, now: datetime, taken: set[tuple[str, str]]) -> dict[str, Any]:
    """The store body of a cluster's summary; its key is new in the mind and in `taken`
    (the keys of the mind and of the other summaries being written), and is added to it."""
    counts = Counter(tag for m in cluster.members for tag in m.tags)
    half = len(cluster.members) / 2
    shared = [tag for tag, count in counts.most_common() if count >= half and count > 1]
    tags = [*[t for t in shared if t != SUMMARY_TAG][: MAX_TAGS - 1], SUMMARY_TAG]
    return {
        "category": cluster.category,
        "key": _summary_key(cluster, shared, taken),
        "content": summary_text(cluster, now=now),
        "tags": tags,
        "priority": Priority(max(m.priority for m in cluster.members)).label,
        "source": Source.SYSTEM,
        "confidence": SUMMARY_CONFIDENCE,
    }


def _summary_key(cluster: Cluster, shared: list[str], taken: set[tuple[str, str]]) -> str:
    first = cluster.members[0].key
    if first.startswith(f"{cluster.category}_"):
        first = first[len(cluster.category) + 1 :]
    names = [*shared, first, "memories"]
    topic = next(s for s in (_KEY_UNSAFE.sub("_", n).strip("_.-") for n in names) if s)
    base = f"{cluster.category}_summary_{topic}"[: MAX_KEY_LENGTH - 8]
    key, n = base, 1
    while (cluster.category, key) in taken:
        n += 1
        key = f"{base}_{n}"
    taken.add((cluster.category, key))
    return key


# --- Compacting and undoing ----------------------------------------------------------------


@dataclass
class Compacted:
    """One cluster: its summary (a draft with no id on a dry run) and its originals' ids."""

    summary: Memory
    originals: list[str]


@dataclass
class Compaction:
    dry_run: bool
    results: list[Compacted]

    @property
    def clusters_processed(self) -> int:
        return len(self.results)

    @property
    def memories_compacted(self) -> int:
        return sum(len(r.originals) for r in self.results)


def compaction_actor(actor: Actor) -> Actor:
    """The system, acting for the caller: the audit trail names both."""
    return Actor.system(f"{SYSTEM_NAME} for {actor.name}"[:254])


def memory_compact(
    *, mind: Mind, actor: Actor, body: Any, now: datetime | None = None
) -> Compaction:
    """Compact the mind as a compaction body asks (compact_request_clean): on a dry run the
    plan and the summaries' drafts, nothing written; else each cluster's summary stored
    (source system, unverified) and its originals superseded by it, all in one transaction
    under the mind's write lock. Invalid for a bad body."""
    request = compact_request_clean(body)
    if request.dry_run:
        return compact_dry_run(mind=mind, actor=actor, request=request, now=now)
    return compact_apply(mind=mind, actor=actor, request=request, now=now)


def _plan(mind: Mind, request: CompactRequest, now: datetime) -> list[Cluster]:
    return compact_plan(
        mind=mind,
        older_than=request.older_than,
        category=request.category,
        max_clusters=request.max_clusters,
        min_cluster_size=request.min_cluster_size,
        now=now,
    )


def _taken_keys(mind: Mind, clusters: list[Cluster]) -> set[tuple[str, str]]:
    categories = {c.category for c in clusters}
    return set(
        Memory.objects.filter(mind=mind, category__in=categories, key__contains="_summary_")
        .values_list("category", "key")
        .iterator()
    )


def compact_dry_run(
    *, mind: Mind, actor: Actor, request: CompactRequest, now: datetime | None = None
) -> Compaction:
    """What compact_apply would write now: each summary as a draft (no id), nothing stored."""
    now = now or timezone.now()
    clusters = _plan(mind, request, now)
    taken = _taken_keys(mind, clusters)
    system = compaction_actor(actor)
    results = []
    for cluster in clusters:
        write = memory_body_clean(
            summary_body(cluster, now=now, taken=taken), actor=system, mind_id=mind.pk
        )
        draft = Memory(
            id=None,
            mind=mind,
            source=Source.SYSTEM,
            verified=False,
            created_at=now,
            updated_at=now,
            **write.values,
        )
        results.append(Compacted(draft, [m.pk for m in cluster.members]))
    return Compaction(dry_run=True, results=results)


def compact_apply(
    *,
    mind: Mind,
    actor: Actor,
    request: CompactRequest,
    now: datetime | None = None,
    expected_versions: Mapping[str, str] | None = None,
) -> Compaction:
    """Plan under the mind's write lock, store each cluster's summary and supersede its
    originals by it, in one transaction: all of it is written, or nothing.

    `expected_versions` ({id: version}, the plan a person was shown): Stale, and nothing
    written, unless the plan now holds exactly those memories at those versions."""
    system = compaction_actor(actor)
    with services._write_lock(mind.pk):
        now = now or timezone.now()
        clusters = _plan(mind, request, now)
        if expected_versions is not None:
            planned = {m.pk: memory_version(m) for c in clusters for m in c.members}
            if planned != dict(expected_versions):
                raise Stale(
                    "The memories to compact changed since you looked at the plan: nothing "
                    "was written. Look at the new plan."
                )
        if not clusters:
            return Compaction(dry_run=False, results=[])
        taken = _taken_keys(mind, clusters)
        bodies = [summary_body(c, now=now, taken=taken) for c in clusters]
        stored = services.memory_upsert_many(mind=mind, actor=system, items=bodies, now=now)
        results = []
        for cluster, outcome in zip(clusters, stored, strict=True):
            if isinstance(outcome, services.ItemRefused):
                raise outcome.error  # the whole compaction rolls back
            services.supersede_many(
                memories=cluster.members, by=outcome.memory.pk, actor=system, now=now
            )
            results.append(Compacted(outcome.memory, [m.pk for m in cluster.members]))
    return Compaction(dry_run=False, results=results)


@dataclass
class CompactionUndone:
    """What compact_undo did: the originals it brought back, and whether the summary went."""

    summary_id: str
    restored: list[str]
    summary_deleted: bool


def compact_undo(
    *, mind: Mind, actor: Actor, summary_id: str, now: datetime | None = None
) -> CompactionUndone:
    """Bring back every memory a compaction summary superseded (each audited), then delete
    the summary, which was the system's own text. A summary a person has verified, or that
    no longer holds the system's text, is kept. NotFound for a memory not of this mind;
    Conflict for one that supersedes nothing or is not a compaction's summary."""
    summary = Memory.objects.filter(mind=mind, pk=summary_id).first() if summary_id else None
    if summary is None:
        raise NotFound("No memory with this id in this mind.")
    system = compaction_actor(actor)
    with services._write_lock(mind.pk):
        now = now or timezone.now()
        summary = Memory.objects.filter(mind=mind, pk=summary_id).first()
        if summary is None:
            raise NotFound("No memory with this id in this mind.")
        originals = list(Memory.objects.filter(mind=mind, superseded_by=summary).order_by("pk"))
        if SUMMARY_TAG not in summary.tags or not originals:
            raise Conflict(
                "This memory is not a compaction's summary that supersedes memories: there is "
                "nothing to undo."
            )
        services.supersede_many(memories=originals, by=None, actor=system, now=now)
        deleted = summary.source == Source.SYSTEM and not summary.verified
        if deleted:
            services.memory_delete(memory=summary, actor=system, now=now)
    return CompactionUndone(summary_id, [m.pk for m in originals], deleted)


def compaction_summaries(*, mind: Mind, limit: int = 50) -> list[tuple[Memory, int]]:
    """The mind's compaction summaries that still supersede memories (those an undo can
    bring back), newest first, each with how many it supersedes."""
    summaries = (
        Memory.objects.filter(mind=mind, source=Source.SYSTEM, superseded__isnull=False)
        .annotate(originals=Count("superseded"))
        .order_by("-created_at", "-id")
    )
    return [
        (m, m.originals)  # type: ignore[attr-defined]  # the annotation
        for m in summaries[:limit]
        if SUMMARY_TAG in m.tags
    ]
