"""The stdio bridge's own behaviour (the full round trip is in test_official_client.py)."""

from __future__ import annotations

import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp_server.stdio import Bridge, _one_line


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_server_answers_each_request_with_an_error():
    bridge = Bridge(url=f"http://127.0.0.1:{closed_port()}", key="mk_x", timeout=5)
    stdin = io.StringIO(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        + "\n\n"
        + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + "\n"
        + json.dumps([{"jsonrpc": "2.0", "id": "a", "method": "ping"}])
        + "\n"
    )
    stdout = io.StringIO()
    bridge.serve(stdin, stdout)
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [1, "a"]
    assert all("could not be reached" in a["error"]["message"] for a in answers)


def test_a_line_that_is_not_json_gets_a_parse_error():
    bridge = Bridge(url="http://127.0.0.1:1", key="mk_x")
    assert bridge.relay("{nope")[0]["error"]["code"] == -32700


def test_endpoint_is_derived_from_the_base_url():
    assert Bridge(url="http://h:1/", key="k").endpoint == "http://h:1/mcp"
    assert Bridge(url="http://h:1/mcp", key="k").endpoint == "http://h:1/mcp"


def test_output_is_one_line_and_survives_lone_surrogates():
    assert _one_line({"text": "a\nb ä"}) == '{"text":"a\\nb ä"}'
    assert _one_line({"text": "\ud800"}) == '{"text":"\\ud800"}'


class Recorder(ThreadingHTTPServer):
    """A server on 127.0.0.1 that records every request and answers each with `status`,
    pointing `Location` at `location`."""

    def __init__(self, status: int = 200, location: str | None = None):
        self.requests: list[tuple[str, str | None]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                recorder.requests.append((self.command, self.headers.get("Authorization")))
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}}).encode()
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_HEAD = _answer

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server_port}"

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


@pytest.fixture
def no_proxy(monkeypatch):
    # Straight to 127.0.0.1, whatever proxy the environment names.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_never_leaves_for_its_target(no_proxy, status):
    with Recorder() as elsewhere, Recorder(status, f"{elsewhere.url}/mcp") as synapse:
        bridge = Bridge(url=synapse.url, key="mk_secret", timeout=5)
        answers = bridge.relay(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
    assert synapse.requests == [("POST", "Bearer mk_secret")]
    assert elsewhere.requests == []
    [answer] = answers
    assert answer["id"] == 7
    message = answer["error"]["message"]
    assert f"HTTP {status}" in message
    assert f"127.0.0.1:{elsewhere.server_port}" in message
    assert "redirects are not followed" in message


def test_a_redirect_names_a_relative_location_as_sent(no_proxy):
    with Recorder(302, "/elsewhere") as synapse:
        answers = Bridge(url=synapse.url, key="mk_x", timeout=5).relay(
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        )
    assert synapse.requests == [("POST", "Bearer mk_x")]
    assert "redirect to /elsewhere" in answers[0]["error"]["message"]
