"""Search over a mind's memories, from what a person typed to a page of results.

Callers use `memory_search`, `memory_search_ids`, `memory_search_scored`,
`memory_semantic_search` and `search_mode_default`. What each module of the package does:
docs/internals.md#search.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import ModuleType

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from core.errors import Invalid, Unavailable
from memories.embeddings import Embedder, EmbeddingsError, get_embedder
from memories.embeddings.breaker import BreakerOpen
from memories.filters import MAX_OFFSET, NO_FILTERS, MemoryFilters, order_by
from memories.models import Memory
from memories.search import semantic
from memories.search.query import MAX_QUERY_CHARS, ParsedQuery, SearchQueryError, parse_query
from memories.search.ranking import Ranking, hybrid_ranking, keyword_ids, meaning_ranking
from memories.search.sqlite import content_lead
from minds.models import Mind

__all__ = [
    "DEFAULT_LIMIT",
    "KEYWORD_ONLY",
    "MATCHES",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MEANING_UNAVAILABLE",
    "MODES",
    "ScoredPage",
    "SearchHit",
    "SearchPage",
    "SearchQueryError",
    "SimilarPage",
    "backend",
    "memory_search",
    "memory_search_ids",
    "memory_search_scored",
    "memory_semantic_search",
    "parse_query",
    "search_mode_default",
]

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MODES = ("hybrid", "keyword", "semantic")
# Why a result was found: its words, its meaning, or both.
MATCHES = ("keyword", "meaning", "both")
UNAVAILABLE = (
    "Search by meaning is off on this server (SYNAPSE_EMBEDDINGS=off); "
    "use mode=keyword, or ask its operator to turn embeddings on."
)
# When the question cannot be embedded now (the embeddings API failing, slow or resting
# behind its breaker; the model not loading). What went wrong goes to the log only: it names
# the API's URL and repeats the API's own words.
MEANING_UNAVAILABLE = "Search by meaning is unavailable right now; try keyword search."
KEYWORD_ONLY = "Search by meaning is unavailable right now; these results are by keyword alone."


@dataclass(frozen=True)
class SearchHit:
    memory: Memory
    # Higher is better: negated bm25 on SQLite, ts_rank on PostgreSQL; the cosine by meaning;
    # hybrid: the fused score (semantic.fuse).
    score: float
    snippet: str  # matched words marked «like this» (the content's start when none matched)
    match: str = "keyword"  # one of MATCHES
    similarity: float | None = None  # the cosine, when found by meaning


@dataclass(frozen=True)
class SearchPage:
    query: str
    hits: list[SearchHit]
    total: int  # every match after filters, not only this page
    # How the results were found: the mode asked for, or `keyword` when search by meaning
    # took no part (embeddings off, or the question could not be embedded: then `warnings`).
    mode: str = "keyword"
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ScoredPage:
    """A page of search results as (memory id, score) only, best first; `mode` and
    `warnings` as in SearchPage."""

    scored: list[tuple[str, float]]
    mode: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class SimilarPage:
    """Memories close in meaning to a question, best first, with their cosine in [0, 1]."""

    query: str
    similar: list[tuple[Memory, float]]
    total: int  # every memory at or above the threshold (after filters), not only these


def backend(using: str = DEFAULT_DB_ALIAS) -> ModuleType:
    """The search backend module for the database `using`: sqlite or postgres."""
    vendor = connections[using].vendor
    if vendor == "sqlite":
        from memories.search import sqlite

        return sqlite
    if vendor == "postgresql":
        from memories.search import postgres

        return postgres
    raise NotImplementedError(f"Full-text search is not implemented for {vendor}.")


def search_mode_default() -> str:
    """`hybrid` while embeddings are on, else `keyword`."""
    return "keyword" if str(settings.SYNAPSE_EMBEDDINGS) == "off" else "hybrid"


def memory_search(
    *,
    mind: Mind,
    q: str,
    filters: MemoryFilters = NO_FILTERS,
    limit: int = DEFAULT_LIMIT,
    offset: int = 0,
    mode: str | None = None,
    sort: str | None = None,
    now: datetime | None = None,
) -> SearchPage:
    """The mind's memories matching `q`, best first, each with its score and `match`.

    `keyword`: full-text matches (what memory_list lists with a query); `total` counts them.
    `semantic`: memories close in meaning, that stand out (semantic.standing_out).
    `hybrid` (the default while embeddings are on): one page of ranking.Ranking, the best
    semantic.FUSION_DEPTH of each fused, then every other keyword match; `total` counts them
    all: every keyword match and the memories found by meaning alone.
    `sort` (a name of filters.SORTS) lists the same results in that order instead.
    Quoted phrases, exclusions and `filters` hold in every mode. With embeddings off, or
    no memory of the mind embedded yet, `hybrid` is `keyword`; `semantic` with embeddings
    off is Unavailable. When the question cannot be embedded now, `hybrid` is `keyword` at
    once, saying so in the page's `warnings`, and `semantic` is Unavailable.
    """
    mode = mode or search_mode_default()
    if mode not in MODES:
        raise Invalid.one("mode", f"Must be one of: {', '.join(MODES)}; got {mode[:50]!r}.")
    now = now or timezone.now()
    parsed = _parsed(q)
    engine = backend()
    ran, warnings, ranking = mode, list[str](), None
    if mode == "semantic":
        try:
            embedder = _embedder(needed=True)
            assert embedder is not None  # needed=True raises instead
            if not filters.impossible:
                return _semantic_page(
                    engine=engine,
                    mind=mind,
                    q=q,
                    parsed=parsed,
                    filters=filters,
                    embedder=embedder,
                    sort=sort,
                    limit=limit,
                    offset=offset,
                    now=now,
                )
        except EmbeddingsError as exc:
            raise _cannot_run(exc) from None
    elif mode == "hybrid":
        ranking, ran, warnings = _hybrid_or_keyword(
            engine=engine, mind=mind, q=q, parsed=parsed, filters=filters, now=now, whole=False
        )
    if ranking is None:
        page = _keyword_page(
            engine=engine,
            mind=mind,
            q=q,
            parsed=parsed,
            filters=filters,
            sort=sort,
            limit=limit,
            offset=offset,
            now=now,
        )
    else:
        page = _hybrid_page(
            engine=engine,
            mind=mind,
            q=q,
            parsed=parsed,
            ranking=ranking,
            sort=sort,
            limit=limit,
            offset=offset,
        )
    return replace(page, mode=ran, warnings=warnings)


def memory_search_ids(
    *, mind: Mind, q: str, filters: MemoryFilters = NO_FILTERS, now: datetime | None = None
) -> list[str]:
    """The id of every memory memory_search(q, filters) finds in its default mode, in its
    order (the same ranking.Ranking, read whole), without reading the memories."""
    now = now or timezone.now()
    parsed = _parsed(q)
    if filters.impossible:
        return []
    engine = backend()
    ranking, _, _ = _default_ranking(
        engine=engine, mind=mind, q=q, parsed=parsed, filters=filters, now=now, whole=True
    )
    if ranking is None:  # keywords alone
        return keyword_ids(
            engine=engine, mind=mind, parsed=parsed, filters=filters, now=now, limit=MAX_OFFSET
        )
    return ranking.ids()


def memory_search_scored(
    *,
    mind: Mind,
    q: str,
    filters: MemoryFilters = NO_FILTERS,
    limit: int = DEFAULT_LIMIT,
    now: datetime | None = None,
) -> ScoredPage:
    """The first `limit` results of memory_search(q, filters) in its default mode, as
    (memory id, score) in its order, with its mode and warnings, without reading the
    memories or their snippets (for a caller that reads the rows it needs itself)."""
    now = now or timezone.now()
    parsed = _parsed(q)
    if filters.impossible:
        return ScoredPage(scored=[], mode=search_mode_default())
    engine = backend()
    ranking, ran, warnings = _default_ranking(
        engine=engine, mind=mind, q=q, parsed=parsed, filters=filters, now=now, whole=False
    )
    if ranking is None:
        scored = engine.ranking(
            mind_id=mind.pk, parsed=parsed, filters=filters, limit=limit, now=now
        )
    else:
        scored = [(f.memory_id, f.score) for f in ranking.page(offset=0, limit=limit)]
    return ScoredPage(scored=scored, mode=ran, warnings=warnings)


def _default_ranking(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    now: datetime,
    whole: bool,
) -> tuple[Ranking | None, str, list[str]]:
    """The default mode's hybrid ranking, or None for keywords alone (embeddings off, no
    vector of the mind yet, or the question cannot be embedded now); the mode that ran, as
    memory_search says it; and its warnings."""
    if search_mode_default() != "hybrid":
        return None, "keyword", []
    return _hybrid_or_keyword(
        engine=engine, mind=mind, q=q, parsed=parsed, filters=filters, now=now, whole=whole
    )


def _hybrid_or_keyword(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    now: datetime,
    whole: bool,
) -> tuple[Ranking | None, str, list[str]]:
    """The hybrid ranking, or None for keywords alone (embeddings off: mode `keyword`; no
    vector of the mind yet: mode `hybrid`, as memory_search says it; the question cannot be
    embedded now: `keyword`, with the warning). Filters nothing can pass rank nothing."""
    try:
        embedder = _embedder(needed=False)
        if embedder is None:
            return None, "keyword", []
        if filters.impossible:
            return None, "hybrid", []
        ranking = hybrid_ranking(
            engine=engine,
            mind=mind,
            q=q,
            parsed=parsed,
            filters=filters,
            embedder=embedder,
            now=now,
            whole=whole,
        )
    except EmbeddingsError as exc:
        _skipped(exc)
        return None, "keyword", [KEYWORD_ONLY]
    return ranking, "hybrid", []


def memory_semantic_search(
    *,
    mind: Mind,
    q: str,
    threshold: float,
    limit: int = 10,
    filters: MemoryFilters = NO_FILTERS,
    now: datetime | None = None,
) -> SimilarPage:
    """The mind's memories whose meaning is at least `threshold` close to `q` (cosine, 0 to 1).

    Phrases and exclusions in `q` hold as in memory_search. Unavailable with embeddings off,
    or when the question cannot be embedded now.
    """
    now = now or timezone.now()
    parsed = _parsed(q)
    try:
        embedder = _embedder(needed=True)
        assert embedder is not None  # needed=True raises instead
        if filters.impossible:
            return SimilarPage(query=q, similar=[], total=0)
        _, meaning = meaning_ranking(
            engine=backend(),
            mind=mind,
            q=q,
            parsed=parsed,
            filters=filters,
            embedder=embedder,
            floor=threshold,
            now=now,
        )
    except EmbeddingsError as exc:
        raise _cannot_run(exc) from None
    rows = _memories(mind, [memory_id for memory_id, _ in meaning[:limit]])
    similar = [(rows[i], min(max(s, 0.0), 1.0)) for i, s in meaning[:limit] if i in rows]
    return SimilarPage(query=q, similar=similar, total=len(meaning))


def _keyword_page(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    sort: str | None,
    limit: int,
    offset: int,
    now: datetime,
) -> SearchPage:
    """A page of full-text matches, each with its score and snippet, from one query."""
    if filters.impossible:
        return SearchPage(query=q, hits=[], total=0)
    found = engine.search(
        mind_id=mind.pk,
        parsed=parsed,
        filters=filters,
        sort=sort,
        limit=limit,
        offset=offset,
        now=now,
    )
    hits = [
        SearchHit(memory=m, score=float(m.search_score), snippet=m.search_snippet)
        for m in found.memories
    ]
    return SearchPage(query=q, hits=hits, total=found.total)


def _hybrid_page(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    ranking: Ranking,
    sort: str | None,
    limit: int,
    offset: int,
) -> SearchPage:
    """A page cut from the hybrid order: the memories, their snippets (keyword matches get
    the engine's, the rest the start of their content) and their cosines."""
    shown = ranking.page(offset=offset, limit=limit, sort=sort)
    ranking.close.need([f.memory_id for f in shown])
    rows = _memories(mind, [f.memory_id for f in shown])
    matched = [rows[f.memory_id] for f in shown if f.match != "meaning" and f.memory_id in rows]
    snippets = engine.snippets(mind_id=mind.pk, parsed=parsed, memories=matched)
    hits = [
        SearchHit(
            rows[f.memory_id],
            score=f.score,
            snippet=snippets.get(f.memory_id) or _lead(rows[f.memory_id]),
            match=f.match,
            similarity=ranking.close.of(f.memory_id),
        )
        for f in shown
        if f.memory_id in rows  # else deleted since it was ranked
    ]
    return SearchPage(query=q, hits=hits, total=ranking.total)


def _semantic_page(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    embedder: Embedder,
    sort: str | None,
    limit: int,
    offset: int,
    now: datetime,
) -> SearchPage:
    """A page of the memories close in meaning (semantic.standing_out), best first or in the
    order SORTS[sort] names; `total` counts them all. EmbeddingsError when the question cannot
    be embedded."""
    close, meaning = meaning_ranking(
        engine=engine,
        mind=mind,
        q=q,
        parsed=parsed,
        filters=filters,
        embedder=embedder,
        floor=semantic.NO_FLOOR,
        now=now,
    )
    meaning = semantic.standing_out(close, meaning)
    shown = meaning[offset : offset + limit]
    if sort is not None:
        cosines = dict(meaning)
        found = Memory.objects.filter(mind=mind, pk__in=list(cosines))
        ordered = found.order_by(*order_by(sort)).values_list("pk", flat=True)
        shown = [(i, cosines[i]) for i in ordered[offset : offset + limit]]
    rows = _memories(mind, [memory_id for memory_id, _ in shown])
    hits = [
        SearchHit(rows[i], score=s, snippet=_lead(rows[i]), match="meaning", similarity=s)
        for i, s in shown
        if i in rows
    ]
    return SearchPage(query=q, hits=hits, total=len(meaning), mode="semantic")


def _parsed(q: str) -> ParsedQuery:
    try:
        return parse_query(q)
    except SearchQueryError as exc:
        raise Invalid.one("q", str(exc)) from None


def _skipped(exc: EmbeddingsError) -> None:
    """Log why search by meaning did not run (a resting breaker only at info: the breaker
    said so when it opened)."""
    level = logging.INFO if isinstance(exc, BreakerOpen) else logging.WARNING
    logger.log(level, "Search by meaning skipped: %s", exc)


def _cannot_run(exc: EmbeddingsError) -> Unavailable:
    """The caller's refusal: the same sentence whatever went wrong, which goes to the log."""
    _skipped(exc)
    retry_after = exc.retry_after if isinstance(exc, BreakerOpen) else None
    return Unavailable(MEANING_UNAVAILABLE, retry_after=retry_after)


def _embedder(*, needed: bool) -> Embedder | None:
    """The process's embedder; None when embeddings are off (Unavailable if `needed`).
    EmbeddingsError when it cannot load."""
    embedder = get_embedder()
    if embedder is None and needed:
        raise Unavailable(UNAVAILABLE)
    return embedder


def _memories(mind: Mind, ids: list[str]) -> dict[str, Memory]:
    """The mind's memories among `ids`. Looked up by primary key, then kept only if the
    mind's: an index on the mind would have the database read all of the mind's rows."""
    if not ids:
        return {}
    return {m.pk: m for m in Memory.objects.filter(pk__in=ids) if m.mind_id == mind.pk}


def _lead(memory: Memory) -> str:
    """A snippet for a memory found by meaning alone: the start of its content."""
    return content_lead(memory.content)
