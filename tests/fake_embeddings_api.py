"""An embeddings API on 127.0.0.1 that the test steers: answering, failing or too slow.

It answers POST /v1/embeddings as OpenAI does, with the FakeEmbedder's vectors, while `mode`
is "answer"; "fail" is a 500 whose text holds an internal URL and a masked key, as real
upstreams' errors do; "slow" holds each request until the test ends (or HOLD seconds).
`calls` counts the requests it got. `embeddings_api` points the settings at it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memories import embeddings
from memories.embeddings import breaker
from memories.search import semantic
from tests.fake_embedder import FakeEmbedder

MODEL = "fake-embed"
KEY = "sk-test-4f9a1c2b7d"
# What the upstream says when it fails: an address and a key no client may ever see.
UPSTREAM_URL = "http://10.20.30.40:8080/internal/v1/embeddings"
UPSTREAM_KEY = "sk-proj-****************Zq7f"
UPSTREAM_ERROR = f"upstream {UPSTREAM_URL} refused key {UPSTREAM_KEY}: model overloaded"
HOLD = 20  # seconds a slow answer is held at most


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
    """Answer the handler's request with `payload` as JSON."""
    raw = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


class FakeEmbeddingsAPI:
    def __init__(self) -> None:
        self.mode = "answer"
        self.calls = 0
        self.release = threading.Event()
        self._embedder = FakeEmbedder()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.calls += 1
                api.answer(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        if self.mode == "slow":
            self.release.wait(HOLD)
        if self.mode == "fail":
            return send_json(handler, 500, {"error": {"message": UPSTREAM_ERROR}})
        vectors = self._embedder.embed_documents(body["input"])
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        with contextlib.suppress(OSError):  # the client gave up waiting
            send_json(handler, 200, {"object": "list", "data": data, "model": MODEL})
        return None


class Clock:
    """The breaker's clock, moved by the test instead of waited on."""

    def __init__(self, start: float) -> None:
        self.now = start

    def time(self) -> float:
        return self.now


# Named apart from their functions, so a test module imports the function and takes the
# fixture by its name without shadowing the import.
@pytest.fixture(name="embeddings_api")
def embeddings_api_fixture(settings, monkeypatch) -> Iterator[FakeEmbeddingsAPI]:
    """The fake API as the server's SYNAPSE_EMBEDDINGS, with a short query timeout."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    api = FakeEmbeddingsAPI()
    thread = threading.Thread(target=api.httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    settings.SYNAPSE_EMBEDDINGS = api.base_url
    settings.SYNAPSE_EMBEDDINGS_MODEL = MODEL
    settings.SYNAPSE_EMBEDDINGS_KEY = KEY
    settings.SYNAPSE_EMBEDDINGS_QUERY_TIMEOUT = 0.3
    monkeypatch.setattr(embeddings, "_embedders", {})
    semantic.forget_cached()
    yield api
    api.release.set()
    api.httpd.shutdown()
    api.httpd.server_close()
    semantic.forget_cached()


@pytest.fixture(name="clock")
def clock_fixture(monkeypatch) -> Clock:
    import time

    moved = Clock(time.time())
    monkeypatch.setattr(breaker, "time", moved)
    return moved


def fresh_process() -> None:
    """Forget this process's embedder, as a new worker starts without one (its vectors'
    length unknown until the API answers)."""
    embeddings._embedders.clear()
