"""How close a question is to text it has nothing to do with: what a small mind's standings
are measured against.

Search by meaning reads a memory's cosine as its standing among the question's closest
memories (semantic.Standing). A mind of a handful of memories has too few of them to say
what "close" is; the question's cosines with REFERENCE_TEXTS (memories of other people, on
everyday subjects, in the languages Synapse's users write) fill the measure up, where the
model runs in this process (an embeddings API is asked for the question alone).
"""

from __future__ import annotations

import threading

import numpy as np

from memories.embeddings import Embedder, Vectors

REFERENCE_TEXTS = (
    "Prefers a window seat on long flights.",
    "Her sister lives in Porto and visits every summer.",
    "Takes the 8:15 train on weekdays.",
    "Allergic to penicillin.",
    "Keeps receipts in a shoebox for the tax return.",
    "Learned to sail at a summer camp as a teenager.",
    "Drinks green tea in the afternoon.",
    "The team's standup is at half past nine.",
    "Sold the old car last spring.",
    "Reads crime novels before bed.",
    "Grew up near a lighthouse.",
    "Uses a paper notebook for to-do lists.",
    "Plays five-a-side football on Thursdays.",
    "Dislikes phone calls; prefers email.",
    "The flat has a small balcony facing west.",
    "Birthday is in early March.",
    "Volunteers at the food bank once a month.",
    "Wants to visit Japan in the autumn.",
    "Bakes sourdough at the weekend.",
    "The quarterly report is due at the end of the month.",
    "Prefiere el café sin azúcar.",
    "Su hermano trabaja en un hospital.",
    "Gosta de caminhar na praia ao domingo.",
    "A reunião mensal é na primeira segunda-feira.",
    "Tränar på gymmet två gånger i veckan.",
    "Hennes bror bor i Göteborg.",
    "Fietst elke dag naar het werk.",
    "Zijn moeder woont in Utrecht.",
    "Spielt am Wochenende Tennis.",
    "Die Steuererklärung ist im Mai fällig.",
    "Has a standing desk at the office.",
    "Listens to jazz while cooking.",
)
_lock = threading.Lock()
_vectors: dict[str, Vectors] = {}


def reference_vectors(embedder: Embedder) -> Vectors:
    """REFERENCE_TEXTS embedded as memories are, once per process and model."""
    found = _vectors.get(embedder.model)
    if found is None:
        with _lock:
            found = _vectors.get(embedder.model)
            if found is None:
                found = _vectors[embedder.model] = embedder.embed_documents(list(REFERENCE_TEXTS))
    return found


def reference_cosines(embedder: Embedder, query: Vectors) -> list[float]:
    """The question's cosines with REFERENCE_TEXTS, best first. EmbeddingsError when the
    reference cannot be embedded (an embeddings API that is down)."""
    cosines = np.asarray(reference_vectors(embedder) @ query, dtype=np.float64)
    return sorted(cosines.tolist(), reverse=True)
