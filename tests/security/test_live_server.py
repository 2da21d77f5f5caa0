"""Hostile input over real HTTP, against gunicorn started as `make run` starts it: chunked
bodies (gunicorn passes them on without a Content-Length), raw garbage, lying lengths, huge
headers. The server stays up and keeps answering, and its log (gunicorn's access and error
log, Django's request log at INFO) never shows a Mind Key or what was searched for.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.reliability.harness import GunicornServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = GunicornServer(tmp_path_factory.mktemp("live"), env={"LOG_LEVEL": "INFO"})
    server.key = server.create_mind("live@example.com")
    server.start()
    yield server
    server.stop()


def raw(server: GunicornServer, data: bytes, *, read: bool = True) -> bytes:
    """Send bytes as they are; return what came back (until the server closes or 5 s)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
        conn.sendall(data)
        if not read:
            return b""
        out = b""
        try:
            while chunk := conn.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return out


def request(server, method: str, path: str, *, headers: dict, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return raw(server, ("\r\n".join(lines) + "\r\n\r\n").encode() + body)


def chunked(body: bytes, size: int = 1000) -> bytes:
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size])
        for i in range(0, len(body), size)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


def status_and_json(answer: bytes) -> tuple[int, dict]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        decoded, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            decoded, rest = decoded + rest[:size], rest[size + 2 :]
        body = decoded
    return status, json.loads(body) if body else {}


def assert_alive(server) -> None:
    client = server.client(token=server.key)
    assert client.request("GET", "/health").status == 200
    reply = client.request(
        "POST", "/memory", json_body={"category": "note", "content": "still here"}
    )
    assert reply.status in (200, 201), reply.body
    client.close()


def test_a_chunked_body_is_read_and_stored(server):
    body = json.dumps({"category": "fact", "key": "chunked_ok", "content": "sent in chunks"})
    answer = request(
        server,
        "POST",
        "/memory",
        headers={
            "Authorization": f"Bearer {server.key}",
            "Content-Type": "application/json",
            "Transfer-Encoding": "chunked",
        },
        body=chunked(body.encode(), size=7),
    )
    status, data = status_and_json(answer)
    assert status == 201, answer[:500]
    assert data["content"] == "sent in chunks"


def test_a_chunked_body_over_the_limit_is_413(server):
    body = json.dumps({"category": "fact", "content": "x" * (2 * 1024 * 1024)}).encode()
    answer = request(
        server,
        "POST",
        "/memory",
        headers={
            "Authorization": f"Bearer {server.key}",
            "Content-Type": "application/json",
            "Transfer-Encoding": "chunked",
        },
        body=chunked(body, size=64 * 1024),
    )
    status, data = status_and_json(answer)
    assert status == 413, answer[:500]
    assert data["error"] == "payload_too_large"
    assert_alive(server)


def test_a_content_length_over_the_limit_is_413_without_reading_it(server):
    answer = request(
        server,
        "POST",
        "/memory",
        headers={
            "Authorization": f"Bearer {server.key}",
            "Content-Type": "application/json",
            "Content-Length": str(50 * 1024 * 1024),
        },
        body=b'{"category": "fact", ',  # the rest never comes
    )
    status, data = status_and_json(answer)
    assert status == 413
    assert data["error"] == "payload_too_large"


GARBAGE = [
    b"\x00\x01\x02\x03\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
    b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",  # request smuggling shape
    b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /health HTTP/1.1\r\nHost: evil.example.com\r\n\r\n",
]


@pytest.mark.parametrize("data", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_gets_a_4xx_or_a_closed_connection_and_the_server_stays_up(server, data):
    answer = raw(server, data)
    if answer:
        status = int(answer.split(b" ", 2)[1])
        assert 400 <= status < 500, answer[:300]
    assert_alive(server)


@pytest.mark.parametrize("data", GARBAGE[:7], ids=range(7))
def test_errors_found_before_django_are_json_too(server, data):
    answer = raw(server, data)
    if answer:
        assert b"content-type: application/json" in answer.lower(), answer[:300]
        status, body = status_and_json(answer)
        assert 400 <= status < 500 and body["error"] and body["detail"]


def test_a_search_too_long_for_the_api_is_its_json_400(server):
    answer = request(
        server,
        "GET",
        "/memory/search?q=" + "a" * 5000,
        headers={"Authorization": f"Bearer {server.key}"},
    )
    status, body = status_and_json(answer)
    assert status == 400 and body["error"] == "invalid" and "q" in body["fields"]


def test_a_request_line_too_long_for_the_server_is_a_json_414(server):
    answer = request(
        server,
        "GET",
        "/memory/search?q=" + "%C3%A9" * 2000,
        headers={"Authorization": f"Bearer {server.key}"},
    )
    status, body = status_and_json(answer)
    assert status == 414 and body["error"] == "uri_too_long", answer[:300]
    assert_alive(server)


def test_a_client_that_sends_half_a_body_and_leaves_does_not_hurt(server):
    for _ in range(5):
        raw(
            server,
            b"POST /memory HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + server.key.encode() + b"\r\nContent-Length: 1000\r\n\r\n{",
            read=False,
        )
    assert_alive(server)


def test_the_log_never_shows_a_mind_key_or_search_words(server):
    secret_word = "zanzibarquux"
    client = server.client(token=server.key)
    client.request("POST", "/memory", json_body={"category": "fact", "content": secret_word})
    client.request("GET", f"/memory/search?q={secret_word}")
    client.request("GET", "/memory?limit=0")  # a 400, logged by Django
    client.request("GET", "/memory/mem_nosuchthing")  # a 404
    client.request("POST", "/memory/mem_nosuchthing/verify")  # a 403 (agents do not verify)
    client.close()
    anon = server.client()
    anon.request("GET", f"/memory?key={server.key}&mind_key={server.key}")  # 401, key in URL
    anon.request("GET", "/memory", headers={"Authorization": f"Bearer {server.key}x"})  # 401
    anon.request("GET", "/memory", headers={"Authorization": f"Bearer {server.key[:-1]}"})
    anon.request("POST", "/mcp", headers={"Authorization": f"Bearer {server.key}zz"})
    anon.close()
    server.stop()  # flush and close the log
    server.start()
    log = server.log_text()
    assert "GET /memory/search HTTP/1.1" in log  # the access log is there, without the query
    assert "Not Found: /memory/mem_nosuchthing" in log  # so is Django's request log
    assert server.key not in log
    assert server.key[11:] not in log  # the secret part: the first 11 characters are shown
    assert server.key[11:31] not in log
    assert secret_word not in log
