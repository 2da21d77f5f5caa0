"""A small, exact stand-in for the embedding model, for tests of what search by meaning does
with its answers rather than of the model itself.

Each word is mapped to a concept (`CONCEPTS`, else the word itself) and a text's vector counts
its concepts, one dimension each: texts sharing a concept are close in meaning, texts sharing
none are orthogonal. So "pets" finds "Has a border collie named Pixel" by meaning alone.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from memories import embeddings
from memories.embeddings import Vectors
from memories.search import semantic

CONCEPTS = {
    word: concept
    for concept, words in {
        "animal": "animal animals pet pets dog dogs collie cat cats puppy",
        "boss": "boss manager managers lead supervisor",
    }.items()
    for word in words.split()
}
DIMENSIONS = 512


class FakeEmbedder:
    model = "test-concepts-v1"
    dimensions = DIMENSIONS
    in_process = True

    def _vector(self, text: str) -> Vectors:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            concept = CONCEPTS.get(word, word)
            vector[zlib.crc32(concept.encode()) % DIMENSIONS] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.stack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> Vectors:
        return self._vector(text)


@pytest.fixture
def fake_embedder(monkeypatch, settings) -> Iterator[FakeEmbedder]:
    """Every caller of get_embedder() (search and the worker, which tests run at once) gets
    the FakeEmbedder while the test runs."""
    settings.SYNAPSE_EMBEDDINGS = "local"
    fake = FakeEmbedder()
    config = ("local", str(settings.SYNAPSE_EMBEDDINGS_THREADS))
    monkeypatch.setitem(embeddings._embedders, config, fake)
    semantic.forget_cached()
    yield fake
    semantic.forget_cached()
