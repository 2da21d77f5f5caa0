"""Serve Synapse's MCP tools over stdio by relaying to a running server's `POST /mcp`.

    python -m mcp_server.stdio --url http://localhost:8000 --key mk_...
    SYNAPSE_URL=http://localhost:8000 SYNAPSE_MIND_KEY=mk_... python -m mcp_server.stdio

Standard library only: it also runs as a copied file. Design notes:
docs/internals.md#the-stdio-bridge.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any, TextIO, cast
from urllib.parse import urlsplit

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
PARSE_ERROR = -32700


def _log(message: str) -> None:
    print(f"synapse-mcp-stdio: {message}", file=sys.stderr, flush=True)


def _request_ids(message: Any) -> list[Any]:
    """Ids of the requests in a message or batch (notifications and responses have none)."""
    items = message if isinstance(message, list) else [message]
    return [
        item["id"]
        for item in items
        if isinstance(item, dict) and "method" in item and item.get("id") is not None
    ]


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _one_line(message: Any) -> str:
    """Compact JSON on one line; ASCII-escaped when it holds a lone surrogate (not UTF-8)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(message, separators=(",", ":"))
    return text


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would replay the Authorization header (the Mind Key) to wherever a 3xx points:
    # the 3xx comes back as an HTTPError instead.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _moved(status: int, location: str | None) -> str:
    host = urlsplit(location).netloc.rpartition("@")[2] if location else ""  # no userinfo
    where = f" to {host or location}" if location else ""
    return (
        f"Synapse answered HTTP {status}, a redirect{where}; redirects are not followed "
        "(the Mind Key is sent only to --url). Point --url at the server itself."
    )


class Bridge:
    def __init__(self, *, url: str, key: str, timeout: float = 60.0):
        base = url.rstrip("/")
        self.endpoint = base if base.endswith("/mcp") else base + "/mcp"
        self.key = key
        self.timeout = timeout
        self.protocol_version: str | None = None
        self.session_id: str | None = None
        self._opener = urllib.request.build_opener(_NoRedirects())

    def _headers(self) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "User-Agent": "synapse-mcp-stdio",
        }
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _post(self, body: bytes) -> tuple[int, str, bytes, dict[str, str]]:
        request = urllib.request.Request(
            self.endpoint, data=body, headers=self._headers(), method="POST"
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return (
                    response.status,
                    response.headers.get("Content-Type", ""),
                    response.read(),
                    {k.lower(): v for k, v in response.headers.items()},
                )
        except urllib.error.HTTPError as exc:
            return (
                exc.code,
                exc.headers.get("Content-Type", ""),
                exc.read(),
                {k.lower(): v for k, v in exc.headers.items()},
            )

    def relay(self, line: str) -> list[Any]:
        """The messages to write back for one stdin line (possibly none)."""
        try:
            message = json.loads(line)
        except ValueError as exc:
            return [_error(None, PARSE_ERROR, f"Parse error: {exc}")]
        ids = _request_ids(message)
        is_initialize = isinstance(message, dict) and message.get("method") == "initialize"
        if is_initialize:
            self.protocol_version = None  # the header is not sent on the handshake itself
        try:
            status, content_type, body, headers = self._post(line.encode("utf-8"))
        except (OSError, urllib.error.URLError) as exc:
            reason = f"Synapse at {self.endpoint} could not be reached: {exc}"
            _log(reason)
            return [_error(i, INTERNAL_ERROR, reason) for i in ids]

        if 300 <= status < 400:
            reason = _moved(status, headers.get("location"))
            _log(reason)
            return [_error(i, INVALID_REQUEST, reason) for i in ids]
        if status == 202 or not body.strip():
            return []
        answers = self._decode(content_type, body)
        if status >= 400:
            reason = self._reason(status, answers)
            _log(f"HTTP {status}: {reason}")
            return [_error(i, INVALID_REQUEST, reason) for i in ids]
        if is_initialize:
            self.session_id = headers.get("mcp-session-id") or self.session_id
            for answer in answers:
                result = answer.get("result") if isinstance(answer, dict) else None
                version = result.get("protocolVersion") if isinstance(result, dict) else None
                if isinstance(version, str):
                    self.protocol_version = version
        return answers

    @staticmethod
    def _decode(content_type: str, body: bytes) -> list[Any]:
        text = body.decode("utf-8", errors="replace")
        if content_type.lower().startswith("text/event-stream"):
            events = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
            return [json.loads(event) for event in events if event]
        try:
            return [json.loads(text)]
        except ValueError:
            return [{"raw": text[:500]}]

    @staticmethod
    def _reason(status: int, answers: list[Any]) -> str:
        for answer in answers:
            if isinstance(answer, dict):
                error = answer.get("error")
                if isinstance(error, dict) and error.get("message"):
                    return str(error["message"])
                if answer.get("detail"):
                    return str(answer["detail"])
        return f"Synapse answered HTTP {status}."

    def serve(self, stdin: TextIO, stdout: TextIO) -> None:
        for raw in iter(stdin.readline, ""):
            line = raw.strip()
            if not line:
                continue
            for answer in self.relay(line):
                stdout.write(_one_line(answer) + "\n")
                stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_server.stdio",
        description="Serve Synapse's MCP tools over stdio, relaying to a running server.",
    )
    parser.add_argument(
        "--url",
        default=os.environ.get("SYNAPSE_URL", "http://localhost:8000"),
        help="Synapse base URL (env SYNAPSE_URL; default http://localhost:8000).",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get("SYNAPSE_MIND_KEY"),
        help="The mind's key, mk_... (env SYNAPSE_MIND_KEY; the env keeps it out of `ps`).",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="Seconds to wait for an answer (60)."
    )
    args = parser.parse_args(argv)
    if not args.key:
        parser.error("a Mind Key is needed: --key mk_... or SYNAPSE_MIND_KEY")
    # stdio is UTF-8 and line-buffered whatever the locale: messages are one line each.
    # The interpreter's own streams are TextIOWrapper; typeshed only promises TextIO.
    cast(io.TextIOWrapper, sys.stdin).reconfigure(encoding="utf-8")
    cast(io.TextIOWrapper, sys.stdout).reconfigure(encoding="utf-8", newline="\n")
    _log(f"relaying stdio to {args.url.rstrip('/')}/mcp")
    with contextlib.suppress(KeyboardInterrupt):
        Bridge(url=args.url, key=args.key, timeout=args.timeout).serve(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
