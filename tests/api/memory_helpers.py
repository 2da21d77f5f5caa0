"""Reading and judging the memory endpoints' answers (the memories themselves come from
tests/factories.py)."""

from __future__ import annotations

import json


def body_of(response) -> bytes:
    """The body of a plain or a streamed answer (recall, diff, audit and export stream)."""
    if not response.streaming:
        return response.content
    if not hasattr(response, "_streamed_body"):  # a stream can be read once
        response._streamed_body = b"".join(response.streaming_content)
    return response._streamed_body


def text_of(response) -> str:
    return body_of(response).decode()


def json_of(response):
    return json.loads(body_of(response))


def ids(body: dict) -> list[str]:
    return [m["id"] for m in body["memories"]]


def assert_invalid(response, field: str) -> dict:
    """A 400 in the contract's error shape, naming `field`."""
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid"
    assert field in body["fields"], body
    return body


def assert_isolated(path: str, *, mind, stranger_agent, other_human) -> None:
    """The stranger's agent sees nothing of `mind`; a person naming a mind not theirs gets 404."""
    theirs = stranger_agent.get(path)
    assert theirs.status_code in (200, 404), theirs.content
    if theirs.status_code == 200:
        assert mind.pk not in text_of(theirs)
    separator = "&" if "?" in path else "?"
    assert other_human.get(f"{path}{separator}mind={mind.pk}").status_code == 404
