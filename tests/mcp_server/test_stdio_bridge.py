"""The stdio bridge's own behaviour (the full round trip is in test_official_client.py)."""

from __future__ import annotations

import io
import json
import socket

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
