"""Near-repeats: a warning when a store nearly repeats another live memory of the mind, and
the mind's groups of near-repeats. Nothing is merged or deleted here.

At write time the new memory has no vector yet (the worker embeds it later), so the store's
check is by words: the full-text index names a few candidates, a lexical similarity judges
them. The list by groups also compares the vectors. Design notes:
docs/internals.md#hygiene-duplicates-and-contradictions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from memories.filters import NO_FILTERS
from memories.hygiene import pairs
from memories.hygiene.contradictions import judge
from memories.hygiene.lexical import Text, similarity
from memories.models import HygieneDismissal, Memory
from memories.search.query import STOP_WORDS, ParsedQuery, SearchQueryError, Term, parse_query
from minds.models import Mind

KIND = HygieneDismissal.Kind.DUPLICATE
# Chosen on the dev part of bench/duplicates_eval.py (docs/performance.md).
LEXICAL_THRESHOLD = 0.5
COSINE_THRESHOLD = 0.94
# Candidates the full-text index names per stored memory, from this many of its words.
QUERY_WORDS = 6
CANDIDATES = 8
# A sync of more items is stored without the check: its cost grows with the items.
CHECK_MAX_ITEMS = 100
WARNINGS_PER_MEMORY = 3
_WORD = re.compile(r"\w+")
# A word more memories hold than this joins no pair in the list by words.
MOST_SHARING = 50


def store_warnings(
    *, mind_id: str, written: Sequence[Memory], now: datetime
) -> dict[str, list[str]]:
    """For memories just written: {memory id: warnings naming the live memories of the mind
    (other ids, other (category, key)) its content nearly repeats}. One full-text query per
    memory and one read of the candidates; nothing for more than CHECK_MAX_ITEMS."""
    if not written or len(written) > CHECK_MAX_ITEMS:
        return {}
    from memories.search import backend

    engine = backend()
    candidates: dict[str, list[str]] = {}
    for memory in written:
        query = _query(memory.content)
        if query is None:
            continue
        ranked = engine.ranking(
            mind_id=mind_id, parsed=query, filters=NO_FILTERS, limit=CANDIDATES + 1, now=now
        )
        candidates[memory.pk] = [found for found, _ in ranked if found != memory.pk]
    wanted = {found for ids in candidates.values() for found in ids}
    if not wanted:
        return {}
    others = {
        m.pk: m
        for m in Memory.objects.filter(mind_id=mind_id, pk__in=wanted, superseded_by__isnull=True)
        .live(now)
        .only("id", "category", "key", "content")
    }
    close: dict[str, list[tuple[float, Memory]]] = {}
    for memory in written:
        text = Text(memory.content)
        for other in (others.get(found) for found in candidates.get(memory.pk, [])):
            if other is None or (other.category, other.key) == (memory.category, memory.key):
                continue
            score = similarity(text, Text(other.content))
            if score >= LEXICAL_THRESHOLD:
                close.setdefault(memory.pk, []).append((score, other))
    # Read only when something is close: most stores repeat nothing.
    kept = _dismissed(mind_id, {m.pk for m in written} | set(others)) if close else set()
    warnings: dict[str, list[str]] = {}
    for memory_id, found in close.items():
        found = [(s, o) for s, o in found if pairs.pair(memory_id, o.pk) not in kept]
        found.sort(key=lambda item: (-item[0], item[1].pk))
        if found:
            warnings[memory_id] = [_warning(o, s) for s, o in found[:WARNINGS_PER_MEMORY]]
    return warnings


def _warning(other: Memory, score: float) -> str:
    return (
        f"Nearly repeats {other.pk} (\u201c{other.key}\u201d), similarity {score:.2f}: stored "
        "anyway; supersede one if they say the same."
    )


def _query(content: str) -> ParsedQuery | None:
    """The content's longest words as an any-of-these search: long words are the rare ones,
    and few of them keep the match (and its ranking) to fewer memories."""
    found = [w for w in _WORD.findall(content.casefold()) if w not in STOP_WORDS]
    ordered = sorted(dict.fromkeys(found), key=len, reverse=True)[:QUERY_WORDS]
    try:
        parse_query(" ".join(ordered))  # refuses what cannot be searched
    except SearchQueryError:
        return None
    return ParsedQuery(optional=tuple(Term(w) for w in ordered))


def _dismissed(mind_id: str, ids: set[str]) -> set[pairs.Pair]:
    rows = HygieneDismissal.objects.filter(mind_id=mind_id, kind=KIND, first_id__in=ids)
    return {pairs.pair(a, b) for a, b in rows.values_list("first_id", "second_id")}


@dataclass(frozen=True)
class DuplicateGroup:
    """Memories that nearly repeat one another (most recently updated first), and the
    highest similarity between two of them (a cosine where both have vectors)."""

    memories: list[Memory]
    similarity: float


def duplicate_groups(*, mind: Mind, now: datetime | None = None) -> list[DuplicateGroup]:
    """The mind's live memories grouped by near-repeats, most similar group first.

    Pairs whose vectors are close (cosine at least COSINE_THRESHOLD) and, where one of the
    two has no vector yet (or embeddings are off), pairs close in words (lexical similarity
    at least LEXICAL_THRESHOLD) are joined; pairs a person kept (pair_keep_both) are not."""
    now = now or timezone.now()
    memories = pairs.live_memories(mind, now)
    by_id = {m.pk: m for m in memories}
    vectors = pairs.mind_vectors(mind.pk)
    found = pairs.close_in_meaning(vectors, among=by_id, threshold=COSINE_THRESHOLD)
    embedded = set(vectors.index) if vectors is not None else set()
    texts = pairs.texts(memories)
    shared = pairs.sharing({k: t.tokens for k, t in texts.items()}, most=MOST_SHARING)
    for candidate in shared:
        # Where both have vectors, their meaning decides.
        if candidate[0] in embedded and candidate[1] in embedded:
            continue
        score = similarity(texts[candidate[0]], texts[candidate[1]])
        if score >= LEXICAL_THRESHOLD:
            found[candidate] = score
    kept = pairs.dismissed(mind, KIND)
    # Close texts that state different values ("in Berlin" / "in Munich") contradict, not repeat.
    links = {
        p: s for p, s in found.items() if p not in kept and judge(by_id[p[0]], by_id[p[1]]) is None
    }
    return _groups(links, by_id)


def _groups(links: dict[pairs.Pair, float], by_id: dict[str, Memory]) -> list[DuplicateGroup]:
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in links:
        parent[root(a)] = root(b)
    members: dict[str, list[str]] = {}
    for memory_id in parent:
        members.setdefault(root(memory_id), []).append(memory_id)
    best: dict[str, float] = {}
    for (a, _), score in links.items():
        best[root(a)] = max(best.get(root(a), 0.0), score)
    groups = [
        DuplicateGroup(
            sorted((by_id[m] for m in ids), key=lambda m: (m.updated_at, m.pk), reverse=True),
            round(best[top], 4),
        )
        for top, ids in members.items()
    ]
    groups.sort(key=lambda g: (-g.similarity, g.memories[0].pk))
    return groups
