"""GET /memory/tags: tag counts from the MemoryTag index, most used first."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, assert_isolated
from tests.factories import remember


def test_tags_most_used_first_then_by_name(agent, mind):
    remember(mind, "a", tags=["Docker", "infra"])
    remember(mind, "b", tags=["docker", "python"])
    remember(mind, "c", tags=["docker", "infra"])
    remember(mind, "d")
    body = agent.get("/memory/tags").json()
    assert body["tags"] == [
        {"tag": "docker", "count": 3},
        {"tag": "infra", "count": 2},
        {"tag": "python", "count": 1},
    ]
    assert body["total_memories"] == 4
    assert body["total_tags"] == 3


def test_tags_follow_updates_and_deletes(agent, mind):
    memory = remember(mind, "a", tags=["old"])
    agent.put(f"/memory/{memory.pk}", {"tags": ["new"]}, format="json")
    assert agent.get("/memory/tags").json()["tags"] == [{"tag": "new", "count": 1}]
    agent.delete(f"/memory/{memory.pk}")
    assert agent.get("/memory/tags").json() == {"tags": [], "total_memories": 0, "total_tags": 0}


def test_tags_leave_out_expired_unless_asked(agent, mind):
    remember(mind, "a", tags=["t"])
    remember(mind, "b", tags=["t", "gone"], expires_at=timezone.now() - timedelta(days=1))
    assert agent.get("/memory/tags").json()["tags"] == [{"tag": "t", "count": 1}]
    body = agent.get("/memory/tags?include_expired=true").json()
    assert body["tags"] == [{"tag": "t", "count": 2}, {"tag": "gone", "count": 1}]
    assert body["total_memories"] == 2


def test_tags_limit(agent, mind):
    for i in range(5):
        remember(mind, f"k{i}", tags=[f"t{i}"])
    body = agent.get("/memory/tags?limit=2").json()
    assert len(body["tags"]) == 2 and body["total_tags"] == 5
    assert_invalid(agent.get("/memory/tags?limit=0"), "limit")


def test_tags_query_count(agent, mind):
    for i in range(30):
        remember(mind, f"k{i}", tags=[f"t{i % 7}", "common"])
    with CaptureQueriesContext(connection) as ctx:
        assert len(agent.get("/memory/tags").json()["tags"]) == 8
    # mind key, tag counts, expired memories' tag counts, live memories
    assert len(ctx.captured_queries) <= 4


def test_tags_isolation(mind, stranger_agent, other_human):
    remember(mind, "a", tags=["secret"])
    assert stranger_agent.get("/memory/tags").json()["tags"] == []
    assert_isolated(
        "/memory/tags", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )
