"""The order of search results: the closest in meaning that pass the filters, and the one
hybrid order (keyword and meaning fused) that every page, every id list and every chosen
sort of a hybrid search is cut from.

Only ids and scores come out of here; memories.search reads the memories of a page.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from types import ModuleType

from django.db.models import Q
from django.db.models.expressions import RawSQL

from memories.embeddings import Embedder
from memories.filters import MAX_OFFSET, MemoryFilters, order_by
from memories.models import Memory
from memories.search import pgvector, semantic
from memories.search.query import ParsedQuery, meaning_text
from memories.search.semantic import FUSION_DEPTH, Closeness, Fused
from minds.models import Mind


def meaning_ranking(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    embedder: Embedder,
    floor: float,
    now: datetime,
    enough: int | None = None,
) -> tuple[Closeness, list[tuple[str, float]]]:
    """The closeness of the mind's memories to `q`, and those at least `floor` close that
    pass `filters` and the query's phrases and exclusions, best first: all of them, or the
    first `enough`. EmbeddingsError when the question cannot be embedded."""
    # In the database where it has pgvector, else numpy over the mind's cached matrix.
    closeness = pgvector.closeness if pgvector.in_use() else semantic.closeness
    close = closeness(
        mind_id=mind.pk,
        embedder=embedder,
        question=meaning_text(q),
        floor=floor,
        limit=semantic.CANDIDATES,
    )
    # Checked best first, a few times `enough` at once: most pass, so one round usually does.
    # A phrase or an exclusion passes few, and each round would run its MATCH again: one.
    constrained = bool(parsed.required or parsed.excluded)
    step = 2 * enough if enough and not constrained else len(close.ranked)
    kept: list[tuple[str, float]] = []
    for start in range(0, len(close.ranked), max(step, 1)):
        chunk = close.ranked[start : start + step]
        passing = engine.passing(
            mind_id=mind.pk, parsed=parsed, filters=filters, ids=[i for i, _ in chunk], now=now
        )
        kept += [(memory_id, s) for memory_id, s in chunk if memory_id in passing]
        if enough and len(kept) >= enough:
            break
    return close, kept


@dataclass
class Ranking:
    """A hybrid search's results in order: `fused` (the best FUSION_DEPTH of each side,
    fused by semantic.fuse), then every other keyword match, in keyword order, scored no
    higher than the last fused one. `total` counts them all: every keyword match and the
    memories found by meaning alone. Past `fused`, the keyword order is read as far as asked.
    """

    fused: list[Fused]
    total: int
    close: Closeness
    engine: ModuleType
    mind: Mind
    parsed: ParsedQuery
    filters: MemoryFilters
    now: datetime
    # Which of the closest in meaning match by keyword too (further down, for some).
    worded: set[str]
    # The whole keyword order, when it was read at once.
    keyword_order: list[str] | None = None

    def page(self, *, offset: int, limit: int, sort: str | None = None) -> list[Fused]:
        """The results from `offset`, at most `limit`: in this order, or all of them in the
        order SORTS[sort] names."""
        if sort is not None:
            return self._sorted_page(sort=sort, offset=offset, limit=limit)
        shown = self.fused[offset : offset + limit]
        start, stop = max(offset - len(self.fused), 0), offset + limit - len(self.fused)
        if stop > 0:
            shown += [Fused(i, self._below, "keyword") for i in self._beyond(stop)[start:]]
        return shown

    def ids(self) -> list[str]:
        """Every result's id, in order."""
        return [f.memory_id for f in self.fused] + self._beyond(None)

    @property
    def _below(self) -> float:
        return min((f.score for f in self.fused), default=0.0)

    def _beyond(self, stop: int | None) -> list[str]:
        """The keyword matches after `fused`, in keyword order: the first `stop`, or all."""
        if self.total == len(self.fused):  # every keyword match is among the fused
            return []
        order = self.keyword_order
        if order is None:
            # Past the keyword order's fused head, only `worded` are fused ones already.
            depth = MAX_OFFSET if stop is None else FUSION_DEPTH + len(self.worded) + stop
            order = keyword_ids(
                engine=self.engine,
                mind=self.mind,
                parsed=self.parsed,
                filters=self.filters,
                now=self.now,
                limit=depth,
            )
        seen = {f.memory_id for f in self.fused}
        rest = [memory_id for memory_id in order if memory_id not in seen]
        return rest if stop is None else rest[:stop]

    def _sorted_page(self, *, sort: str, offset: int, limit: int) -> list[Fused]:
        """The same results, in the order SORTS[sort] names."""
        if self.total == len(self.fused):
            fused_ids = [f.memory_id for f in self.fused]
            results = Memory.objects.filter(mind=self.mind, pk__in=fused_ids)
        else:
            meaning_only = [f.memory_id for f in self.fused if f.match == "meaning"]
            sql, params = self.engine.matching_ids_sql(mind_id=self.mind.pk, parsed=self.parsed)
            keyword_matches = Q(pk__in=RawSQL(sql, params))
            results = self.filters.apply(Memory.objects.filter(mind=self.mind), now=self.now)
            results = results.filter(
                keyword_matches | Q(pk__in=meaning_only) if meaning_only else keyword_matches
            )
        by_id = {f.memory_id: f for f in self.fused}
        ordered = results.order_by(*order_by(sort)).values_list("pk", flat=True)
        page = ordered[offset : offset + limit]
        return [by_id.get(i) or Fused(i, self._below, "keyword") for i in page]


def hybrid_ranking(
    *,
    engine: ModuleType,
    mind: Mind,
    q: str,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    embedder: Embedder,
    now: datetime,
    whole: bool = False,
) -> Ranking | None:
    """The hybrid order of the mind's results for `q` (see Ranking); None when no memory of
    the mind has a vector of the embedder's model (nothing to fuse). With `whole`, the whole
    keyword order is read at once (for every id), else its best and how many match (for a
    page). EmbeddingsError when the question cannot be embedded."""
    close, meaning = meaning_ranking(
        engine=engine,
        mind=mind,
        q=q,
        parsed=parsed,
        filters=filters,
        embedder=embedder,
        floor=semantic.NO_FLOOR,
        now=now,
        enough=FUSION_DEPTH,
    )
    if not close.vectors:
        return None
    closest = meaning[:FUSION_DEPTH]
    closest_ids = [memory_id for memory_id, _ in closest]
    order = None
    if whole:
        order = keyword_ids(
            engine=engine, mind=mind, parsed=parsed, filters=filters, now=now, limit=MAX_OFFSET
        )
        best, keyword_total = order[:FUSION_DEPTH], len(order)
        worded = set(order) & set(closest_ids)
    else:
        # The keyword side's best, how many match in all, and which of the closest in
        # meaning match by keyword too (further down than its best, for some): one query.
        ranked, keyword_total, worded = engine.ranking_counted(
            mind_id=mind.pk,
            parsed=parsed,
            filters=filters,
            limit=FUSION_DEPTH,
            among=closest_ids,
            now=now,
        )
        best = [memory_id for memory_id, _ in ranked]
    fused = semantic.fuse(keyword=best, meaning=closest, close=close)
    # Found by meaning among the best, and by keyword further down: both.
    fused = [
        replace(f, match="both") if f.match == "meaning" and f.memory_id in worded else f
        for f in fused
    ]
    if any(f.match == "meaning" for f in fused):
        holding, more = holding_every_word(
            engine=engine,
            mind=mind,
            parsed=parsed,
            filters=filters,
            now=now,
            best=best,
            matches=keyword_total,
        )
        fused = words_before_meaning(fused, holding=holding, more=more, close=close)
    meaning_only = sum(1 for f in fused if f.match == "meaning")
    return Ranking(
        fused=fused,
        total=keyword_total + meaning_only,
        close=close,
        engine=engine,
        mind=mind,
        parsed=parsed,
        filters=filters,
        now=now,
        worded=worded,
        keyword_order=order,
    )


def holding_every_word(
    *,
    engine: ModuleType,
    mind: Mind,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    now: datetime,
    best: list[str],
    matches: int,
) -> tuple[list[str], bool]:
    """The best FUSION_DEPTH memories passing `filters` that hold every word of the question
    and its phrases, and whether more do. `best`: the best keyword matches, of `matches`."""
    if not matches:
        return [], False
    words = parsed.words or parsed.optional
    if not words or (len(words) == 1 and not parsed.required):
        return best, matches > len(best)  # a keyword match holds its one word, or its phrases
    every = replace(parsed, required=parsed.required + words, optional=())
    ranked = engine.ranking(
        mind_id=mind.pk, parsed=every, filters=filters, limit=FUSION_DEPTH + 1, now=now
    )
    return [memory_id for memory_id, _ in ranked[:FUSION_DEPTH]], len(ranked) > FUSION_DEPTH


def words_before_meaning(
    fused: list[Fused], *, holding: list[str], more: bool, close: Closeness
) -> list[Fused]:
    """`fused` with every memory that holds the question's words (`holding`) above every
    memory found by meaning alone, and of those only the ones clearly closer in meaning than
    any that hold the words: the rest are look-alikes (API.md §9.1)."""
    if not holding:
        return fused
    shown = {f.memory_id for f in fused}
    cosines = [close.of(memory_id) for memory_id in holding]
    if more or not shown.issuperset(holding) or None in cosines:
        # They fill the pages, or one has no vector yet to be closer than: no look-alikes.
        return [f for f in fused if f.match != "meaning"]
    bar = close.standing.of(max(c for c in cosines if c is not None)) + semantic.LOOK_ALIKE_MARGIN
    held = set(holding)
    last = max(i for i, f in enumerate(fused) if f.memory_id in held)
    head = [f for f in fused[: last + 1] if f.match != "meaning"]
    # A meaning-only score is its standing; moved below the last holder, it takes that score.
    moved = [
        replace(f, score=min(f.score, head[-1].score))
        for f in fused[: last + 1]
        if f.match == "meaning" and f.score >= bar
    ]
    tail = [f for f in fused[last + 1 :] if f.match != "meaning" or f.score >= bar]
    return head + moved + tail


def keyword_ids(
    *,
    engine: ModuleType,
    mind: Mind,
    parsed: ParsedQuery,
    filters: MemoryFilters,
    now: datetime,
    limit: int,
) -> list[str]:
    """The ids of the best `limit` keyword matches, best first."""
    ranked = engine.ranking(mind_id=mind.pk, parsed=parsed, filters=filters, limit=limit, now=now)
    return [memory_id for memory_id, _ in ranked]
