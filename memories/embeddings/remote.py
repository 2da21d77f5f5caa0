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
# The most tokens of one text the API takes unless told (SYNAPSE_EMBEDDINGS_MAX_TOKENS): a
# text-embeddings server refuses longer inputs (413) instead of truncating them.
MAX_TOKENS = 512
# Tokens the server adds to each text ([CLS] and [SEP], <s> and </s>, a prompt of its own).
RESERVED_TOKENS = 8
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
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = f"remote:{model}"
        self._model = model
        self._key = key
        self._timeout = timeout
        self._query_timeout = query_timeout
        self._breaker = breaker
        self._max_bytes = max(max_tokens - RESERVED_TOKENS, 1)
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
        body = json.dumps({"model": self._model, "input": [self.cut(t) for t in texts]})
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(
            self.url, data=body.encode("utf-8"), headers=headers, method="POST"
        )
        try:
            timeout = self._query_timeout if query else self._timeout
            with self._opener.open(request, timeout=timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            moved = " (redirects are not followed)" if 300 <= exc.code < 400 else ""
            raise self._error(
                f"answered {exc.code} {exc.reason}{moved}: {_server_message(exc)}"
            ) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timed_out(query=query) from None
            raise self._error(f"could not be reached: {exc.reason}.") from None
        except TimeoutError:
            raise self._timed_out(query=query) from None
        except (http.client.HTTPException, OSError) as exc:
            raise self._error(f"failed: {exc!r}.") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise self._error(f"answered more than {MAX_RESPONSE_BYTES} bytes.")
        return self._vectors(raw, count=len(texts))

    def cut(self, text: str) -> str:
        """The text's head that no tokenizer makes more tokens of than the API takes: each
        token of a byte-level BPE, a WordPiece or a SentencePiece vocabulary stands for one
        byte of UTF-8 or more, so at most `max_tokens - RESERVED_TOKENS` bytes, whole
        characters (about 500 characters of English, 125 emoji, 170 of Chinese)."""
        head = text[: self._max_bytes].encode("utf-8")[: self._max_bytes]
        return head.decode("utf-8", "ignore")

    def _error(self, detail: str) -> EmbeddingsError:
        return EmbeddingsError(f"The embeddings API at {self.url} {detail}", reason=detail)

    def _timed_out(self, *, query: bool) -> EmbeddingsError:
        if query:
            return self._error(
                f"did not answer a search's question within {self._query_timeout:g} s "
                "(SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT)."
            )
        return self._error(
            f"did not answer within {self._timeout:g} s (SYNAPSE_EMBEDDINGS_TIMEOUT)."
        )

    def _vectors(self, raw: bytes, *, count: int) -> Vectors:
        """The answer's vectors in input order, checked and normalised."""
        try:
            payload = json.loads(raw)
            items = sorted(payload["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in items]
            matrix = np.array(rows, dtype=np.float64)
        except (ValueError, KeyError, TypeError) as exc:
            raise self._error(
                f"did not answer with an embeddings list ({exc!r}): "
                f"{raw[:_DETAIL_CHARS].decode('utf-8', 'replace')}"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
            raise self._error(
                f"answered {matrix.shape[0] if matrix.ndim else 0} vectors of shape "
                f"{matrix.shape[1:]} for {count} texts."
            )
        if not np.isfinite(matrix).all() or not np.linalg.norm(matrix, axis=1).all():
            raise self._error("answered a vector that is not finite, or zero.")
        dimensions = int(matrix.shape[1])
        if self._dimensions not in (None, dimensions):
            raise self._error(
                f"answered {dimensions}-dimension vectors for {self._model}, "
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
