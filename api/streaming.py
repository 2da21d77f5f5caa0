"""Answers written as they are read, so a worker's memory stays small whatever a mind holds.

`streamed_json(answer)` sends `answer` as JSON; each value that is an iterator (a list the
core reads row by row) is written item by item, as a JSON list. The bytes are what the
API's renderer would write for the whole answer. Everything that can fail with a clear 4xx
(parameters, the mind, counts) happens before the response is made; only reading rows is
left to the stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse

from api.renderers import ORJSONRenderer

# What is sent at a time: small enough to keep memory flat, large enough to be few writes.
PIECE_BYTES = 64 * 1024

_renderer = ORJSONRenderer()


def _render(value: Any) -> bytes:
    # The renderer answers None with an empty body; inside an answer it is null.
    return b"null" if value is None else _renderer.render(value)


def streamed_json(answer: dict[str, Any]) -> StreamingHttpResponse:
    return StreamingHttpResponse(_pieces(answer), content_type="application/json")


def _pieces(answer: dict[str, Any]) -> Iterator[bytes]:
    buffer = bytearray(b"{")
    for index, (name, value) in enumerate(answer.items()):
        if index:
            buffer += b","
        buffer += _render(name) + b":"
        if not isinstance(value, Iterator):
            buffer += _render(value)
            continue
        buffer += b"["
        for number, item in enumerate(value):
            if number:
                buffer += b","
            buffer += _render(item)
            if len(buffer) >= PIECE_BYTES:
                yield bytes(buffer)
                buffer.clear()
        buffer += b"]"
    buffer += b"}"
    yield bytes(buffer)
