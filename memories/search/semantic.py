"""Search by meaning: a mind's memory vectors scored against a question by cosine, with numpy.

Brute force over the mind's vectors of the current model (one matrix-vector product; the
vectors are L2-normalised, so the dot product is the cosine). The matrix is kept per process,
keyed by (mind, model) and checked against a change marker read in one cheap query (how many
vectors there are and when the newest was stored): the worker stores vectors with the time
they were made and a write deletes the old vector, so any change moves one or the other.
Only ids come out of here; selectors.py filters them and loads the memories, always
scoped by the mind again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import connection

from memories.embeddings import Embedder, Vectors
from memories.models import MemoryVector

# Matrices kept per process, by their size: a few large minds or many small ones.
CACHE_BYTES = 48 * 1024 * 1024

_VECTORS = MemoryVector._meta.db_table
_MIND_VECTORS = f"FROM {_VECTORS} WHERE mind_id = %s AND model = %s"
# Two subqueries: the newest is read off the index's end, where one query scans for both.
_MARKER_SQL = f"SELECT (SELECT count(*) {_MIND_VECTORS}), (SELECT max(embedded_at) {_MIND_VECTORS})"
_READ_SQL = f"SELECT memory_id, vector {_MIND_VECTORS} ORDER BY memory_id"


@dataclass(frozen=True)
class MindMatrix:
    """A mind's vectors of one model: row i is the vector of memory ids[i]."""

    marker: tuple[Any, ...]
    ids: list[str]
    matrix: Vectors
    index: dict[str, int]  # memory id -> row

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes) + 160 * len(self.ids)  # and the ids, twice


_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str], MindMatrix] = OrderedDict()


def mind_matrix(*, mind_id: str, model: str, dimensions: int) -> MindMatrix:
    """The mind's vectors of `model`, from this process's cache while they have not changed.

    A stored vector of another length than `dimensions` is left out (a model changed its
    size under the same name: the worker re-embeds it).
    """
    with connection.cursor() as cursor:
        cursor.execute(_MARKER_SQL, [mind_id, model, mind_id, model])
        count, latest = cursor.fetchone()
    marker = (count, latest)
    key = (mind_id, model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached.marker == marker:
            _cache.move_to_end(key)
            return cached
    found = _read(mind_id=mind_id, model=model, dimensions=dimensions, marker=marker)
    with _lock:
        _cache[key] = found
        _cache.move_to_end(key)
        held = sum(m.nbytes for m in _cache.values())
        while held > CACHE_BYTES and len(_cache) > 1:
            _, dropped = _cache.popitem(last=False)
            held -= dropped.nbytes
    return found


def _read(*, mind_id: str, model: str, dimensions: int, marker: tuple[Any, ...]) -> MindMatrix:
    if not marker[0]:
        return MindMatrix(marker, [], np.zeros((0, dimensions), dtype=np.float32), {})
    with connection.cursor() as cursor:
        cursor.execute(_READ_SQL, [mind_id, model])
        rows = cursor.fetchall()
    size = dimensions * 4
    kept = [(memory_id, bytes(blob)) for memory_id, blob in rows if len(blob) == size]
    matrix = np.frombuffer(b"".join(blob for _, blob in kept), dtype=np.float32)
    ids = [memory_id for memory_id, _ in kept]
    index = {memory_id: row for row, memory_id in enumerate(ids)}
    return MindMatrix(marker, ids, matrix.reshape(-1, dimensions), index)


def forget_cached() -> None:
    """Empty this process's cache (tests; a process that wants its memory back)."""
    with _lock:
        _cache.clear()


class Closeness:
    """How close the mind's memories are in meaning to one question."""

    def __init__(
        self,
        ranked: list[tuple[str, float]],
        index: dict[str, int] | None = None,
        product: npt.NDArray[np.float32] | None = None,
    ) -> None:
        self.ranked = ranked  # (memory id, cosine), best first, none below the floor
        self._index = index or {}
        self.vectors = len(self._index)  # how many of the mind's memories have one
        self._product = product

    def of(self, memory_id: str) -> float | None:
        """The memory's cosine with the question; None when it has no vector of the model."""
        row = self._index.get(memory_id)
        return None if row is None or self._product is None else float(self._product[row])

    def need(self, memory_ids: list[str]) -> None:
        """Have `of` ready for these memories (here it always is: the matrix holds them all)."""


def closeness(
    *, mind_id: str, embedder: Embedder, question: str, floor: float, limit: int
) -> Closeness:
    """The mind's memories closest in meaning to `question`: at most `limit`, none below
    `floor`, best first; memories without a vector of the embedder's model are not there."""
    found = mind_matrix(mind_id=mind_id, model=embedder.model, dimensions=embedder.dimensions)
    if not found.ids:
        return Closeness([])
    query = np.asarray(embedder.embed_query(question), dtype=np.float32)
    scores: npt.NDArray[np.float32] = found.matrix @ query
    above = np.flatnonzero(scores >= floor)
    if len(above) > limit:
        above = above[np.argpartition(-scores[above], limit - 1)[:limit]]
    # Best first; equal scores in row order (by id), so a page boundary never moves.
    order = above[np.argsort(-scores[above], kind="stable")]
    ranked = [(found.ids[i], float(scores[i])) for i in order.tolist()]
    return Closeness(ranked, found.index, scores)


# --- Fusion with the keyword ranking (hybrid) ----------------------------------------------

# Each side contributes its best FUSION_DEPTH; a memory found only by meaning needs at least
# MEANING_FLOOR. The fused score is the cosine, plus KEYWORD_BONUS / keyword rank for a
# keyword match whose meaning agrees (cosine at least AGREEMENT): a keyword match on a word
# used in passing, far from the question's meaning, gets no lift. Tuned on
# bench/search_eval.py, which also prints the fusions tried before (rank fusion, min-max).
FUSION_DEPTH = 100
MEANING_FLOOR = 0.12
AGREEMENT = 0.3
KEYWORD_BONUS = 0.05
# How many of the closest memories are checked against the filters and the query's phrases
# and exclusions, so a narrow filter still leaves enough found by meaning.
CANDIDATES = 1000


@dataclass(frozen=True)
class Fused:
    memory_id: str
    score: float
    match: str  # "keyword", "meaning" or "both"


def fuse(*, keyword: list[str], meaning: list[tuple[str, float]], close: Closeness) -> list[Fused]:
    """One ranking from the keyword matches (best first) and the memories close in meaning.

    A keyword match without a vector of the model (not embedded yet) counts as agreeing: it
    keeps its keyword lift and ranks among the others by it.
    """
    close.need(keyword)  # the keyword matches' cosines, where not at hand, in one query
    ranks = {memory_id: rank for rank, memory_id in enumerate(keyword, 1)}
    close_ids = {memory_id for memory_id, _ in meaning}
    fused = []
    for memory_id in dict.fromkeys([*keyword, *(memory_id for memory_id, _ in meaning)]):
        cosine = close.of(memory_id)
        rank = ranks.get(memory_id)
        if rank is None:
            fused.append(Fused(memory_id, float(cosine or 0.0), "meaning"))
            continue
        agreement = AGREEMENT if cosine is None else cosine
        score = agreement + (KEYWORD_BONUS / rank if agreement >= AGREEMENT else 0.0)
        fused.append(Fused(memory_id, score, "both" if memory_id in close_ids else "keyword"))
    never = len(ranks) + 1
    fused.sort(key=lambda f: (-f.score, ranks.get(f.memory_id, never), f.memory_id))
    return fused
