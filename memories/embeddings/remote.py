"""An OpenAI-compatible embeddings API: Ollama (`/v1`), OpenAI, a text-embeddings server.

POST {base}/embeddings with {"model": …, "input": [texts]} and `Authorization: Bearer {key}`
when a key is set; the answer's `data[i].embedding` (in `index` order) are normalised here,
whatever the server does. Every failure is an EmbeddingsError that names the URL and what
went wrong (the status and the server's own message, a timeout, a refused connection): for
the operator's log, never for a client.

A search's question waits `query_timeout` (short: a web request waits on it) and goes through
a Breaker when given one; the worker's documents wait `timeout`.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from memories.embeddings.breaker import Breaker
from memories.embeddings.errors import EmbeddingsError
from memories.embeddings.vectors import Vectors, normalised

# Texts per request: well under every server's limit, few enough that one slow batch is short.
BATCH_SIZE = 64
# A text is cut to this many characters: about 500 tokens of English, which every embeddings
# model reads (longer inputs are refused by some servers instead of truncated).
MAX_CHARS = 2048
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_DETAIL_CHARS = 300


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would replay the key to wherever it points: answer with the 3xx instead.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class RemoteEmbedder:
    """One embeddings API and model; safe to share between threads (a connection per call)."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        key: str = "",
        timeout: float = 30.0,
        query_timeout: float = 2.0,
        breaker: Breaker | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = f"remote:{model}"
        self._model = model
        self._key = key
        self._timeout = timeout
        self._query_timeout = query_timeout
        self._breaker = breaker
        self._dimensions: int | None = None
        self._opener = urllib.request.build_opener(_NoRedirects())

    @property
    def dimensions(self) -> int:
        """The model's vector length, learned from its first answer (asked for when unknown).

        Only a search asks before any answer (documents' answers teach it): asked as a
        question is."""
        if self._dimensions is None:
            self._question("dimensions")
        assert self._dimensions is not None
        return self._dimensions

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of texts, not one text")
        if not texts:
            return np.empty((0, self.dimensions), dtype=np.float32)
        batches = [
            self._request(list(texts[start : start + BATCH_SIZE]))
            for start in range(0, len(texts), BATCH_SIZE)
        ]
        return np.concatenate(batches)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._question(text)[0]
        return vector

    def _question(self, text: str) -> Vectors:
        """A search's request: the short timeout, through the breaker (BreakerOpen)."""
        if self._breaker is None:
            return self._request([text], query=True)
        seen = self._breaker.before()
        try:
            vectors = self._request([text], query=True)
        except EmbeddingsError:
            self._breaker.failed()
            raise
        self._breaker.succeeded(seen)
        return vectors

    def _request(self, texts: list[str], *, query: bool = False) -> Vectors:
        body = json.dumps({"model": self._model, "input": [t[:MAX_CHARS] for t in texts]})
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(
            self.url, data=body.encode("utf-8"), headers=headers, method="POST"
        )
        where = f"The embeddings API at {self.url}"
        try:
            timeout = self._query_timeout if query else self._timeout
            with self._opener.open(request, timeout=timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            moved = " (redirects are not followed)" if 300 <= exc.code < 400 else ""
            raise EmbeddingsError(
                f"{where} answered {exc.code} {exc.reason}{moved}: {_server_message(exc)}"
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise EmbeddingsError(self._timed_out(where, query=query)) from None
            raise EmbeddingsError(f"{where} could not be reached: {exc.reason}.") from None
        except TimeoutError:
            raise EmbeddingsError(self._timed_out(where, query=query)) from None
        except (http.client.HTTPException, OSError) as exc:
            raise EmbeddingsError(f"{where} failed: {exc!r}.") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise EmbeddingsError(f"{where} answered more than {MAX_RESPONSE_BYTES} bytes.")
        return self._vectors(raw, count=len(texts), where=where)

    def _timed_out(self, where: str, *, query: bool) -> str:
        if query:
            return (
                f"{where} did not answer a search's question within {self._query_timeout:g} s "
                "(SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT)."
            )
        return f"{where} did not answer within {self._timeout:g} s (SYNAPSE_EMBEDDINGS_TIMEOUT)."

    def _vectors(self, raw: bytes, *, count: int, where: str) -> Vectors:
        """The answer's vectors in input order, checked and normalised."""
        try:
            payload = json.loads(raw)
            items = sorted(payload["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in items]
            matrix = np.array(rows, dtype=np.float64)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingsError(
                f"{where} did not answer with an embeddings list ({exc!r}): "
                f"{raw[:_DETAIL_CHARS].decode('utf-8', 'replace')}"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
            raise EmbeddingsError(
                f"{where} answered {matrix.shape[0] if matrix.ndim else 0} vectors of shape "
                f"{matrix.shape[1:]} for {count} texts."
            )
        if not np.isfinite(matrix).all() or not np.linalg.norm(matrix, axis=1).all():
            raise EmbeddingsError(f"{where} answered a vector that is not finite, or zero.")
        dimensions = int(matrix.shape[1])
        if self._dimensions not in (None, dimensions):
            raise EmbeddingsError(
                f"{where} answered {dimensions}-dimension vectors for {self._model}, "
                f"{self._dimensions} before: has the model behind that name changed?"
            )
        self._dimensions = dimensions
        return normalised(matrix)


def _server_message(error: urllib.error.HTTPError) -> str:
    """The server's own words: OpenAI's {"error": {"message"}}, {"error": "…"} or the body."""
    try:
        body = error.read(64 * 1024).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return "(no body)"
    try:
        detail = json.loads(body)["error"]
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
        text = str(detail)
    except (ValueError, KeyError, TypeError):
        text = body.strip() or "(no body)"
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"
