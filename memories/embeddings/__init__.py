"""Text to vectors for search by meaning; `get_embedder()` is what callers use.

- e5.py     runs the bundled multilingual model (multilingual-e5-small, 4-bit) on this CPU;
- local.py  runs the bundled English-only model (all-MiniLM-L6-v2, int8 ONNX) on this CPU;
- remote.py asks an OpenAI-compatible embeddings API (Ollama, OpenAI, a text-embeddings server).

`SYNAPSE_EMBEDDINGS` picks one (`local`, `local-english`, `off`, or the API's base URL).
Every embedder gives L2-normalised float32 vectors, so a dot product is the cosine, and names
its `model`: a vector is only ever compared with vectors of the same model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from django.conf import settings

from memories.embeddings.errors import EmbeddingsError, ModelFileRefused
from memories.embeddings.vectors import Vectors

__all__ = ["Embedder", "EmbeddingsError", "ModelFileRefused", "Vectors", "get_embedder"]


class Embedder(Protocol):
    """What search and the worker need from a model; one instance serves a whole process."""

    @property
    def model(self) -> str:
        """Stable name stored with each vector: a different name means re-embedding."""
        ...

    @property
    def dimensions(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dimensions), each row L2-normalised; batches and truncates inside."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """(dimensions,), L2-normalised: a question to compare with documents' vectors."""
        ...


# The models that run in this process, by the SYNAPSE_EMBEDDINGS value that picks each.
LOCAL = ("local", "local-english")

_lock = threading.Lock()
_embedders: dict[tuple[str, ...], Embedder] = {}


def get_embedder() -> Embedder | None:
    """The process's embedder for the configured backend, or None when embeddings are off.

    The local model loads (and its files are checked) on the first call, once per process,
    however many threads ask at the same time. Raises EmbeddingsError when it cannot load.
    """
    backend = str(settings.SYNAPSE_EMBEDDINGS)
    if backend == "off":
        return None
    if backend in LOCAL:
        config: tuple[str, ...] = (backend, str(settings.SYNAPSE_EMBEDDINGS_THREADS))
    else:
        config = (
            backend,
            str(settings.SYNAPSE_EMBEDDINGS_MODEL),
            str(settings.SYNAPSE_EMBEDDINGS_KEY),
            str(settings.SYNAPSE_EMBEDDINGS_TIMEOUT),
            str(settings.SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT),
            str(settings.SYNAPSE_EMBEDDINGS_MAX_TOKENS),
        )
    embedder = _embedders.get(config)
    if embedder is not None:
        return embedder
    with _lock:
        embedder = _embedders.get(config)
        if embedder is None:
            embedder = _embedders[config] = _load(config)
        return embedder


def _load(config: tuple[str, ...]) -> Embedder:
    # Imported here: a process with embeddings off (or remote) never loads onnxruntime.
    if config[0] == "local":
        from memories.embeddings.e5 import E5Embedder

        return E5Embedder(threads=int(config[1]))
    if config[0] == "local-english":
        from memories.embeddings.local import LocalEmbedder

        return LocalEmbedder(threads=int(config[1]))
    from memories.embeddings.breaker import Breaker
    from memories.embeddings.remote import RemoteEmbedder

    base_url, model, key, timeout, query_timeout, max_tokens = config
    return RemoteEmbedder(
        base_url=base_url,
        model=model,
        key=key,
        timeout=float(timeout),
        query_timeout=float(query_timeout),
        # One breaker per API and model, whatever the timeouts: every worker shares it.
        breaker=Breaker(f"{base_url} {model}", probe_seconds=float(query_timeout) + 1),
        max_tokens=int(max_tokens),
    )
