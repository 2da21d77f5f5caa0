"""Signed-in browsers (Django test clients with a session) for the dashboard tests."""

from __future__ import annotations

import pytest
from django.test import Client

from memories.actors import Actor
from memories.services import memory_upsert

AGENT = Actor(kind="agent", name="mk_testagent")


@pytest.fixture
def web(owner, mind) -> Client:
    """The owner, signed in with a session (the way a browser uses the dashboard)."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def other_web(other_user) -> Client:
    client = Client()
    client.force_login(other_user)
    return client


def agent_store(mind, **fields):
    """Store a memory the way an agent does (unverified, source agent)."""
    fields.setdefault("category", "fact")
    fields.setdefault("content", "The sky is blue")
    return memory_upsert(mind=mind, actor=AGENT, **fields).memory
