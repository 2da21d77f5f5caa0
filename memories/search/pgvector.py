"""Search by meaning inside PostgreSQL with pgvector: the database finds the nearest vectors.

Used instead of semantic.py's per-process matrices where the `vector` extension and
migration memories 0007 are in place (`in_use`). Design notes: docs/internals.md#pgvector.
"""

from __future__ import annotations

import re
import threading

import numpy as np
from django.db import connection

from memories.embeddings import Embedder
from memories.models import MemoryVector
from memories.search.semantic import Closeness, few_memories

INDEXED_DIMENSIONS = 384  # the size migration 0007 indexes: the bundled model's
ITERATIVE_SCAN = (0, 8)  # the pgvector version that can go on past hnsw.ef_search
EF_SEARCH_MAX = 1000  # pgvector's ceiling for hnsw.ef_search

_VECTORS = MemoryVector._meta.db_table
_STATE_SQL = (
    "SELECT extversion FROM pg_extension WHERE extname = 'vector' AND EXISTS (SELECT 1 FROM "
    "pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding' "
    "AND NOT attisdropped)"
)
_COUNT_SQL = "SELECT count(*){tuning} FROM " + _VECTORS + " WHERE mind_id = %s AND model = %s"


def _nearest_sql(dimensions: int, *, exact: bool = False) -> str:
    # The size is written into the SQL, not bound: the partial index's condition must be
    # visible to the planner as a constant. `exact` orders by an expression no index has.
    embedding = "embedding" if exact else f"embedding::vector({dimensions})"
    return (
        f"SELECT memory_id, {embedding} <=> %s::vector({dimensions}) AS distance "
        f"FROM {_VECTORS} WHERE mind_id = %s AND model = %s "
        f"AND vector_dims(embedding) = {dimensions} ORDER BY distance LIMIT %s"
    )


def _some_sql(dimensions: int) -> str:
    return (
        f"SELECT memory_id, embedding::vector({dimensions}) <=> %s::vector({dimensions}) "
        f"FROM {_VECTORS} WHERE memory_id = ANY(%s) AND mind_id = %s AND model = %s "
        f"AND vector_dims(embedding) = {dimensions}"
    )


_lock = threading.Lock()
_versions: dict[tuple[str, ...], tuple[int, ...] | None] = {}


def version() -> tuple[int, ...] | None:
    """pgvector's version when this database searches with it, else None."""
    if connection.vendor != "postgresql":
        return None
    settings = connection.settings_dict
    key = tuple(str(settings.get(name)) for name in ("NAME", "HOST", "PORT"))
    if key in _versions:
        return _versions[key]
    with connection.cursor() as cursor:
        cursor.execute(_STATE_SQL, [_VECTORS])
        row = cursor.fetchone()
    found = tuple(int(part) for part in re.findall(r"\d+", row[0])[:3]) if row else None
    with _lock:
        _versions[key] = found
    return found


def in_use() -> bool:
    """Whether search by meaning runs in the database (pgvector) rather than with numpy."""
    return version() is not None


def forget() -> None:
    """Ask the database again next time (tests; after migrating memories 0007 either way)."""
    with _lock:
        _versions.clear()


def literal(vector: np.ndarray) -> str:
    """pgvector's text form of a float32 vector: each value exactly, as the float64 it is."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


class StoredCloseness(Closeness):
    """Closeness whose cosines the database computed: those of the nearest memories, and of
    others on demand (`need`), in one query each time."""

    def __init__(
        self,
        ranked: list[tuple[str, float]],
        *,
        cosines: dict[str, float],
        vectors: int,
        mind_id: str,
        model: str,
        query: str,
        dimensions: int,
        reference: list[float],
    ) -> None:
        super().__init__(ranked, reference=reference)
        self.vectors = vectors
        self._cosines: dict[str, float | None] = dict(cosines)
        self._ask = (query, mind_id, model, dimensions)

    def of(self, memory_id: str) -> float | None:
        return self._cosines.get(memory_id)

    def need(self, memory_ids: list[str]) -> None:
        missing = [memory_id for memory_id in memory_ids if memory_id not in self._cosines]
        if not missing:
            return
        query, mind_id, model, dimensions = self._ask
        with connection.cursor() as cursor:
            cursor.execute(_some_sql(dimensions), [query, missing, mind_id, model])
            found = {memory_id: 1.0 - distance for memory_id, distance in cursor.fetchall()}
        self._cosines.update({memory_id: found.get(memory_id) for memory_id in missing})


def closeness(
    *, mind_id: str, embedder: Embedder, question: str, floor: float, limit: int
) -> Closeness:
    """The mind's memories closest in meaning to `question`: at most `limit`, none below
    `floor`, best first (equal cosines by id); memories without a vector of the embedder's
    model are not there. As semantic.closeness, asking the database."""
    model, dimensions = embedder.model, embedder.dimensions
    # The index scan's settings, for the session (no transaction needed, and only this module
    # scans the index): set each time, with the count, in one statement. Where they do not
    # hold (a pooler in transaction mode), a scan that ends short runs again exactly.
    tuning = [("hnsw.ef_search", str(min(max(limit, 40), EF_SEARCH_MAX)))]
    if (version() or ()) >= ITERATIVE_SCAN:
        tuning.append(("hnsw.iterative_scan", "relaxed_order"))
    count_sql = _COUNT_SQL.format(tuning=", set_config(%s, %s, false)" * len(tuning))
    with connection.cursor() as cursor:
        cursor.execute(count_sql, [*(part for pair in tuning for part in pair), mind_id, model])
        vectors = cursor.fetchone()[0]
        if not vectors:
            return Closeness([])
        vector = embedder.embed_query(question)
        query = literal(vector)
        params: list[str | int] = [query, mind_id, model, limit]
        cursor.execute(_nearest_sql(dimensions), params)
        rows = cursor.fetchall()
        if len(rows) < min(limit, vectors):  # an index scan that ended short: exactly now
            cursor.execute(_nearest_sql(dimensions, exact=True), params)
            rows = cursor.fetchall()
    cosines = {memory_id: 1.0 - distance for memory_id, distance in rows}
    ranked = sorted(
        ((memory_id, cosine) for memory_id, cosine in cosines.items() if cosine >= floor),
        key=lambda pair: (-pair[1], pair[0]),
    )
    return StoredCloseness(
        ranked,
        cosines=cosines,
        vectors=vectors,
        mind_id=mind_id,
        model=model,
        query=query,
        dimensions=dimensions,
        reference=few_memories(embedder, vector, ranked),
    )
