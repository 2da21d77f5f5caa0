"""Candidate pairs of a mind's memories, found in one pass: by meaning (the mind's vectors,
a chunked matrix product) and by shared words (an inverted index). Both hygiene checks
start here; each judges the candidates its own way."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime

import numpy as np

from memories.embeddings import EmbeddingsError, get_embedder
from memories.hygiene.lexical import Text
from memories.models import HygieneDismissal, Memory
from memories.search.semantic import MindMatrix, mind_matrix
from minds.models import Mind

Pair = tuple[str, str]  # two memory ids, the smaller first
# Rows of the mind's matrix multiplied at once: a chunk's cosines stay a few MB.
CHUNK = 1024


def pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


def live_memories(mind: Mind, now: datetime) -> list[Memory]:
    """The mind's memories the checks look at: not expired, not superseded."""
    memories = Memory.objects.filter(mind=mind, superseded_by__isnull=True).live(now)
    return list(memories.order_by("id"))


def mind_vectors(mind_id: str) -> MindMatrix | None:
    """The mind's vectors of the configured model; None with embeddings off or not loading."""
    try:
        embedder = get_embedder()
    except EmbeddingsError:
        return None
    if embedder is None:
        return None
    return mind_matrix(mind_id=mind_id, model=embedder.model, dimensions=embedder.dimensions)


def close_in_meaning(
    vectors: MindMatrix | None,
    *,
    among: Collection[str],
    threshold: float,
    rows_of: Collection[str] | None = None,
) -> dict[Pair, float]:
    """Pairs of `among` whose cosine is at least `threshold`; with `rows_of`, only pairs with
    one memory of it."""
    if vectors is None or not vectors.ids:
        return {}
    keep = [vectors.index[m] for m in among if m in vectors.index]
    if len(keep) < 2:
        return {}
    keep.sort()
    matrix = vectors.matrix[keep]
    ids = [vectors.ids[row] for row in keep]
    mine = set(rows_of) if rows_of is not None else None
    left = [i for i, m in enumerate(ids) if mine is None or m in mine]
    found: dict[Pair, float] = {}
    for start in range(0, len(left), CHUNK):
        rows = left[start : start + CHUNK]
        cosines = matrix[rows] @ matrix.T
        for r, c in zip(*np.nonzero(cosines >= threshold), strict=True):
            i, j = rows[int(r)], int(c)
            if i != j:
                found[pair(ids[i], ids[j])] = float(cosines[r, c])
    return found


def sharing(
    labels: Mapping[str, Iterable[str]], *, most: int, rows_of: Collection[str] | None = None
) -> dict[Pair, int]:
    """Pairs of memories sharing a label (a word, a key part, a tag), with how many they
    share. A label more than `most` memories carry says nothing about a pair: left out."""
    holders: dict[str, list[str]] = {}
    for memory_id, names in labels.items():
        for name in set(names):
            holders.setdefault(name, []).append(memory_id)
    mine = set(rows_of) if rows_of is not None else None
    shared: dict[Pair, int] = {}
    for held in holders.values():
        if len(held) < 2 or len(held) > most:
            continue
        for a, b in itertools.combinations(held, 2):
            if mine is None or a in mine or b in mine:
                key = pair(a, b)
                shared[key] = shared.get(key, 0) + 1
    return shared


def texts(memories: Iterable[Memory]) -> dict[str, Text]:
    return {m.pk: Text(m.content) for m in memories}


def dismissed(mind: Mind, kind: str) -> set[Pair]:
    """The pairs of `kind` a person chose to keep both of."""
    rows = HygieneDismissal.objects.filter(mind=mind, kind=kind)
    return {pair(a, b) for a, b in rows.values_list("first_id", "second_id")}
