"""Search by meaning: a mind's memory vectors scored against a question by cosine, with numpy.

Brute force over the mind's vectors of the current model (one matrix-vector product; the
vectors are L2-normalised, so the dot product is the cosine). The matrix is kept per process,
keyed by (mind, model) and checked against the mind's vectors version (VectorsVersion), read
by key: triggers on the vectors' table move it in the same transaction as any insert,
update or delete there, whichever code (or cascade) makes it, so a cached matrix is used
only while it is exactly what the database holds. Only ids come out of here; ranking.py
filters them, and memories.search loads the memories, always scoped by the mind again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt
from django.db import DEFAULT_DB_ALIAS, connection, connections

from memories.embeddings import Embedder, Vectors
from memories.models import MemoryVector, VectorsVersion
from memories.search.baseline import reference_cosines

# Matrices kept per process, by their size: a few large minds or many small ones.
CACHE_BYTES = 48 * 1024 * 1024

_VECTORS = MemoryVector._meta.db_table
_VERSIONS = VectorsVersion._meta.db_table
_MARKER_SQL = f"SELECT version FROM {_VERSIONS} WHERE mind_id = %s"
_READ_SQL = (
    f"SELECT memory_id, vector FROM {_VECTORS} WHERE mind_id = %s AND model = %s ORDER BY memory_id"
)

# The triggers that keep VectorsVersion (migration 0009 holds a frozen copy of this SQL;
# tests/memories/test_search_semantic.py checks the two agree). A mind's row is made by its
# first vector; a delete only moves a row that exists, so deleting a mind, whatever order
# its rows go in, never makes one again.
_BUMP = (
    f"INSERT INTO {_VERSIONS} (mind_id, version) VALUES (new.mind_id, 1) "
    f"ON CONFLICT (mind_id) DO UPDATE SET version = {_VERSIONS}.version + 1"
)
VERSION_TRIGGERS = {
    "sqlite": {
        "memories_vectors_version_ai": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_ai AFTER INSERT ON "
            f"{_VECTORS} BEGIN {_BUMP}; END"
        ),
        "memories_vectors_version_au": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_au AFTER UPDATE ON "
            f"{_VECTORS} BEGIN {_BUMP}; UPDATE {_VERSIONS} SET version = version + 1 "
            "WHERE mind_id = old.mind_id AND old.mind_id <> new.mind_id; END"
        ),
        "memories_vectors_version_ad": (
            f"CREATE TRIGGER IF NOT EXISTS memories_vectors_version_ad AFTER DELETE ON "
            f"{_VECTORS} BEGIN UPDATE {_VERSIONS} SET version = version + 1 "
            "WHERE mind_id = old.mind_id; END"
        ),
    },
    "postgresql": {
        "memories_vectors_version": (
            "CREATE OR REPLACE FUNCTION memories_vectors_version() RETURNS trigger "
            "LANGUAGE plpgsql AS $fn$ BEGIN "
            f"IF TG_OP <> 'DELETE' THEN {_BUMP}; END IF; "
            f"IF TG_OP = 'DELETE' OR old.mind_id <> new.mind_id THEN UPDATE {_VERSIONS} "
            "SET version = version + 1 WHERE mind_id = old.mind_id; END IF; "
            "RETURN NULL; END $fn$"
        ),
        "memories_vectors_version_aiud": (
            "CREATE OR REPLACE TRIGGER memories_vectors_version_aiud AFTER INSERT OR UPDATE OR "
            f"DELETE ON {_VECTORS} FOR EACH ROW EXECUTE FUNCTION memories_vectors_version()"
        ),
    },
}


def ensure_version_triggers(*, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Make the version triggers again if they are missing; True if they were.

    Run after every `migrate` (post_migrate, memories/apps.py): on SQLite, a migration that
    alters the vectors' table remakes it without its triggers. Every mind's version moves
    then, as the vectors may have changed while they were gone. Does nothing before
    migration 0009 made them, or after it was reversed.
    """
    from django.db.migrations.recorder import MigrationRecorder

    from memories.search.sqlite import existing

    db = connections[using]
    if db.vendor != "sqlite":
        return False  # PostgreSQL keeps a table's triggers through ALTER TABLE
    triggers = VERSION_TRIGGERS["sqlite"]
    with db.cursor() as cursor:
        if len(existing(cursor, "trigger", triggers)) == len(triggers):
            return False
        if ("memories", "0009_vectors_version") not in MigrationRecorder(db).applied_migrations():
            return False
        for sql in triggers.values():
            cursor.execute(sql)
        cursor.execute(f"UPDATE {_VERSIONS} SET version = version + 1")
    return True


@dataclass(frozen=True)
class MindMatrix:
    """A mind's vectors of one model: row i is the vector of memory ids[i]."""

    marker: int | None
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
        cursor.execute(_MARKER_SQL, [mind_id])
        found = cursor.fetchone()
    marker = found[0] if found else None  # None: the mind never had a vector
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


def _read(*, mind_id: str, model: str, dimensions: int, marker: int | None) -> MindMatrix:
    if marker is None:
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


def forget_mind(mind_id: str) -> None:
    """Drop the cached vectors of one mind (a memory of it was purged)."""
    with _lock:
        for key in [key for key in _cache if key[0] == mind_id]:
            del _cache[key]


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
        reference: list[float] | None = None,
    ) -> None:
        self.ranked = ranked  # (memory id, cosine), best first, none below the floor
        # The question's cosines with unrelated text, when the mind has too few memories
        # to measure standings by (baseline.py).
        self.reference = reference or []
        self._index = index or {}
        self.vectors = len(self._index)  # how many of the mind's memories have one
        self._product = product

    def of(self, memory_id: str) -> float | None:
        """The memory's cosine with the question; None when it has no vector of the model."""
        row = self._index.get(memory_id)
        return None if row is None or self._product is None else float(self._product[row])

    def need(self, memory_ids: list[str]) -> None:
        """Have `of` ready for these memories (here it always is: the matrix holds them all)."""

    @cached_property
    def standing(self) -> Standing:
        """How the question's cosines stand (Standing), measured once for all who ask."""
        return Standing(self)


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
    return Closeness(ranked, found.index, scores, few_memories(embedder, query, ranked))


# --- Fusion with the keyword ranking (hybrid) ----------------------------------------------

# Models spread their cosines differently (one gives related texts 0.3 to 0.7, another 0.8 to
# 0.9), so search by meaning reads a cosine as its *standing*: how many spreads it lies above
# the question's STANDING_DEPTH closest memories (Standing). A memory found by meaning alone
# needs a standing of MEANING_STANDING and a cosine of MEANING_FLOOR (`standing_out`, the
# answers of a search by meaning too): the least far of the rest is still far, and would fill
# the page and the count. Fused, each side contributes its best FUSION_DEPTH; a score is the
# standing, plus KEYWORD_BONUS / keyword rank for a keyword match whose meaning agrees
# (standing at least AGREEMENT): a keyword match on a word used in passing, far from the
# question's meaning, gets no lift. Chosen on the dev part of each evaluation of
# bench/search_eval.py (docs/performance.md), which also prints the fusions tried before.
FUSION_DEPTH = 100
STANDING_DEPTH = 50
MEANING_FLOOR = 0.12
MEANING_STANDING = 0.5
AGREEMENT = 0.5
KEYWORD_BONUS = 0.3
# Found by meaning alone beside memories holding every word of the question: kept only
# this much higher in standing than they are (look-alikes of a templated note are not).
LOOK_ALIKE_MARGIN = 0.75
# How many of the closest memories are checked against the filters and the query's phrases
# and exclusions, so a narrow filter still leaves enough found by meaning.
CANDIDATES = 1000
# The floor search by meaning reads the closest memories with: every one, as standings are
# measured over the closest whatever their cosine (MEANING_FLOOR applies after).
NO_FLOOR = -1.0
# The least spread a standing is measured against: the closest of a mind of copies barely
# differ, and every small difference would stand out.
LEAST_SPREAD = 0.01


@dataclass(frozen=True)
class Fused:
    memory_id: str
    score: float
    match: str  # "keyword", "meaning" or "both"


def few_memories(
    embedder: Embedder, query: Vectors, ranked: list[tuple[str, float]]
) -> list[float]:
    """The question's cosines with the reference texts when the closest memories are fewer
    than STANDING_DEPTH (a small mind), else nothing. Only a model in this process is asked
    for them: a search never waits on an embeddings API for more than its question."""
    if len(ranked) >= STANDING_DEPTH or not getattr(embedder, "in_process", False):
        return []
    return reference_cosines(embedder, query)


class Standing:
    """A cosine's standing for one question: how many spreads it lies above the mean of the
    question's STANDING_DEPTH closest memories (before any filter), made up with its cosines
    with unrelated text in a mind of fewer (baseline.py)."""

    def __init__(self, close: Closeness) -> None:
        closest = [cosine for _, cosine in close.ranked[:STANDING_DEPTH]]
        measure = np.array(closest + close.reference[: STANDING_DEPTH - len(closest)])
        self.mean = float(measure.mean()) if len(measure) else 0.0
        self.spread = max(float(measure.std()) if len(measure) else 0.0, LEAST_SPREAD)

    def of(self, cosine: float) -> float:
        return (cosine - self.mean) / self.spread


def standing_out(close: Closeness, meaning: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Of the closest in meaning (best first), the ones a search by meaning answers with: the
    first, and every other standing MEANING_STANDING out, none below MEANING_FLOOR."""
    standing = close.standing
    return [
        (memory_id, cosine)
        for n, (memory_id, cosine) in enumerate(meaning)
        if cosine >= MEANING_FLOOR and (n == 0 or standing.of(cosine) >= MEANING_STANDING)
    ]


def fuse(*, keyword: list[str], meaning: list[tuple[str, float]], close: Closeness) -> list[Fused]:
    """One ranking from the keyword matches (best first) and the memories close in meaning.

    A keyword match without a vector of the model (not embedded yet) counts as agreeing: it
    keeps its keyword lift and ranks among the others by it.
    """
    close.need(keyword)  # the keyword matches' cosines, where not at hand, in one query
    standing = close.standing
    ranks = {memory_id: rank for rank, memory_id in enumerate(keyword, 1)}
    close_ids = {memory_id for memory_id, _ in meaning}
    answers = {memory_id for memory_id, _ in standing_out(close, meaning)}
    fused = []
    for memory_id in dict.fromkeys([*keyword, *(memory_id for memory_id, _ in meaning)]):
        cosine = close.of(memory_id)
        rank = ranks.get(memory_id)
        if rank is None:
            if memory_id in answers:
                fused.append(Fused(memory_id, standing.of(float(cosine or 0.0)), "meaning"))
            continue
        agreement = AGREEMENT if cosine is None else standing.of(cosine)
        score = agreement + (KEYWORD_BONUS / rank if agreement >= AGREEMENT else 0.0)
        fused.append(Fused(memory_id, score, "both" if memory_id in close_ids else "keyword"))
    never = len(ranks) + 1
    fused.sort(key=lambda f: (-f.score, ranks.get(f.memory_id, never), f.memory_id))
    return fused
