"""Small helpers shared by the memory endpoint tests."""

from __future__ import annotations

import json
from datetime import datetime

from memories.actors import Actor
from memories.models import Memory
from memories.services import memory_upsert

AGENT = Actor(kind="agent", name="mk_test")
PERSON = Actor(kind="user", name="owner@example.com")


def remember(
    mind, key: str, content: str = "x", *, now: datetime | None = None, **fields
) -> Memory:
    """Store a memory through the service, as an agent unless `actor=` says otherwise."""
    fields.setdefault("category", "fact")
    fields.setdefault("actor", AGENT)
    return memory_upsert(mind=mind, key=key, content=content, now=now, **fields).memory


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


def embed(*memories: Memory, model: str | None = None) -> None:
    """Store each memory's vector as the embedding worker does (its current text, the
    process's model, or `model`), so a test of search by meaning needs no worker."""
    import numpy as np

    from memories.embeddings import get_embedder
    from memories.embeddings.text import embedding_text, text_hash
    from memories.models import MemoryVector

    embedder = get_embedder()
    assert embedder is not None
    texts = [embedding_text(m) for m in memories]
    for memory, text, vector in zip(memories, texts, embedder.embed_documents(texts), strict=True):
        MemoryVector.objects.update_or_create(
            memory=memory,
            defaults={
                "mind_id": memory.mind_id,
                "model": model or embedder.model,
                "text_hash": text_hash(text),
                "vector": np.asarray(vector, dtype=np.float32).tobytes(),
            },
        )
