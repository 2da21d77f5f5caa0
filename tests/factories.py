"""The one module of factories every test uses: people, minds and memories.

- `user_make`, `mind_make`: a person, and a mind of theirs with its Mind Key.
- `share_make`: a mind shared with a person (active) or an address (pending).
- `connection_make`: an OAuth app a person connected to a mind (the consent page's record).
- `upsert` / `remember`: a memory stored through the service (the rules, the audit, the
  version), as an agent unless `actor=` says otherwise; `upsert` answers the service's result.
- `memory_row`: one memory written straight to its table (with its tag rows), past the rules:
  any field as given, no audit event.
- `many_memories`: many of them at once, for a mind past a page or a ranking depth.
- `embed`: the vectors the embedding worker would store, so search by meaning needs no worker.

A file whose memories share other defaults binds them once, e.g.
`store = partial(remember, category="preference")`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from connections.models import Connection
from connections.services import connect
from memories.actors import Actor
from memories.models import Memory, MemoryTag
from memories.services import UpsertResult, memory_upsert
from minds.models import Mind, Share
from minds.services import mind_create

PASSWORD = "correct horse battery staple"
AGENT = Actor(kind="agent", name="mk_test")
PERSON = Actor(kind="user", name="owner@example.com")
SYSTEM = Actor.system()


def user_make(email: str = "someone@example.com", password: str = PASSWORD, **fields) -> User:
    return User.objects.create_user(email=email, password=password, **fields)


def mind_make(owner: User | None = None, name: str = "Mind") -> tuple[Mind, str]:
    """A mind and its raw Mind Key; a new owner unless `owner` is given."""
    return mind_create(owner=owner or user_make(), name=name)


def connection_make(
    mind: Mind,
    person: User,
    name: str = "Hosted Assistant",
    resource: str = "http://testserver/mcp",
) -> Connection:
    """An app registered as a remote MCP client registers, connected to `mind` by `person`."""
    from oauth2_provider.models import Application

    application = Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1:33418/callback",
    )
    return connect(application=application, person=person, mind_id=mind.pk, resource=resource)


def share_make(mind: Mind, who: User | str, acl: str = "read") -> Share:
    """`mind` shared at `acl` with a person (active) or with an address (pending)."""
    if isinstance(who, str):
        return Share.objects.create(mind=mind, email=who.lower(), acl=acl)
    return Share.objects.create(mind=mind, email=who.email, user=who, acl=acl)


def upsert(
    mind: Mind,
    key: Any = None,
    content: Any = "x",
    *,
    category: Any = "fact",
    actor: Actor = AGENT,
    now: datetime | None = None,
    **fields: Any,
) -> UpsertResult:
    """memory_upsert with the usual defaults; no `key` lets the service derive one."""
    if key is not None:
        fields["key"] = key
    return memory_upsert(
        mind=mind, actor=actor, category=category, content=content, now=now, **fields
    )


def remember(mind: Mind, key: Any = None, content: Any = "x", **fields: Any) -> Memory:
    """A memory stored through the service: `upsert(…).memory`."""
    return upsert(mind, key, content, **fields).memory


def memory_row(
    mind: Mind, key: str, content: str = "x", *, category: str = "fact", **fields: Any
) -> Memory:
    """A memory written straight to the table, with its tag rows, past the service's rules."""
    memory = Memory.objects.create(mind=mind, category=category, key=key, content=content, **fields)
    MemoryTag.objects.bulk_create(
        MemoryTag(memory=memory, mind=mind, tag=tag) for tag in memory.tags
    )
    return memory


def many_memories(
    mind: Mind,
    count: int,
    *,
    content: Callable[[int], str] = lambda i: f"Note {i} about nothing in particular.",
    key: Callable[[int], str] = lambda i: f"note_{i:04d}",
    now: datetime | None = None,
    **fields: Any,
) -> list[Memory]:
    """`count` memories of `mind` in one bulk write, newest last; any other field (tags,
    expires_at, …) from `fields`, a value or a function of the index. The search index's
    triggers see them as usual; no vector is made (`embed` stores them where needed)."""
    now = now or timezone.now()
    memories = []
    for i in range(count):
        values = {name: value(i) if callable(value) else value for name, value in fields.items()}
        values.setdefault("category", "note")
        values.setdefault("source", "agent")
        values.setdefault("tags", [])
        moment = now - timedelta(seconds=count - i)
        memories.append(
            Memory(
                mind=mind,
                key=key(i),
                content=content(i),
                created_at=moment,
                updated_at=moment,
                **values,
            )
        )
    with transaction.atomic():
        Memory.objects.bulk_create(memories)
        MemoryTag.objects.bulk_create(
            MemoryTag(memory=m, mind=mind, tag=tag) for m in memories for tag in m.tags
        )
    return memories


def embed(*memories: Memory, model: str | None = None) -> None:
    """Store each memory's vector as the embedding worker does (its current text, the
    process's model, or `model`)."""
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
