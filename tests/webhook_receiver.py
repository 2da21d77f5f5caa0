"""A webhook receiver on 127.0.0.1 that a test or a benchmark steers.

It keeps every request it gets (`received`: headers and body) and answers each with the
next of `answers` (a status; "hang" holds the request until `release()` or HOLD seconds),
then with `default`. `verified()` checks every delivery's signature with the
`standardwebhooks` package, as a real receiver would.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook as Verifier

HOLD = 30  # seconds a held request waits at most


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str = ""
    received: list[Received] = field(default_factory=list)
    answers: list[int | str] = field(default_factory=list)
    default: int | str = 200
    answer_body: bytes = b"ok"
    _released: threading.Event = field(default_factory=threading.Event)
    _arrived: threading.Condition = field(default_factory=threading.Condition)

    def release(self) -> None:
        self._released.set()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """Block until `count` requests arrived (AssertionError after `timeout` seconds)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.received) >= count, timeout):
                raise AssertionError(f"{len(self.received)} of {count} deliveries arrived")
        return list(self.received)

    def bodies(self) -> list[Any]:
        return [r.json for r in self.received]

    def verified(self, secret: str) -> list[Any]:
        """Every request's payload, its signature checked with `secret` the way a
        Standard Webhooks library does (a non-`whsec_` secret is its UTF-8 bytes)."""
        verifier = Verifier(secret if secret.startswith("whsec_") else secret.encode())
        return [verifier.verify(r.body, r.headers) for r in self.received]

    def _next_answer(self) -> int | str:
        with self._arrived:
            return self.answers.pop(0) if self.answers else self.default

    def _record(self, headers: dict[str, str], body: bytes) -> None:
        with self._arrived:
            self.received.append(Received(headers, body, time.monotonic()))
            self._arrived.notify_all()


def whsec(raw: bytes) -> str:
    """A `whsec_` secret for these key bytes."""
    return "whsec_" + base64.b64encode(raw).decode()


@contextmanager
def receiving(**settings: Any) -> Iterator[Receiver]:
    """A Receiver listening on 127.0.0.1 for the block's length."""
    receiver = Receiver(**settings)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            answer = receiver._next_answer()
            if answer == "hang":
                receiver._record(dict(self.headers.items()), body)
                receiver._released.wait(HOLD)
                return  # the connection closes with no answer
            receiver._record(dict(self.headers.items()), body)
            self.send_response(int(answer))
            self.send_header("Content-Length", str(len(receiver.answer_body)))
            self.end_headers()
            self.wfile.write(receiver.answer_body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.release()
        server.shutdown()
        server.server_close()
