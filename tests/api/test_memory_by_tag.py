"""GET /memory/by-tag?tag=: the memories carrying a tag, case-insensitive."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, assert_isolated, ids
from tests.factories import remember


def test_by_tag_lists_memories_with_the_tag(agent, mind):
    docker = remember(mind, "a", tags=["Docker", "infra"])
    remember(mind, "b", tags=["python"])
    body = agent.get("/memory/by-tag?tag=DOCKER").json()
    assert set(body) == {"memories", "total", "limit", "offset"}
    assert ids(body) == [docker.pk]
    assert body["total"] == 1 and body["limit"] == 100 and body["offset"] == 0


def test_by_tag_leaves_out_expired_unless_asked(agent, mind):
    live = remember(mind, "live", tags=["t"])
    gone = remember(mind, "gone", tags=["t"], expires_at=timezone.now() - timedelta(hours=1))
    assert ids(agent.get("/memory/by-tag?tag=t").json()) == [live.pk]
    both = agent.get("/memory/by-tag?tag=t&include_expired=true").json()
    assert set(ids(both)) == {live.pk, gone.pk}


def test_by_tag_pages(agent, mind):
    for i in range(5):
        remember(mind, f"k{i}", tags=["t"])
    body = agent.get("/memory/by-tag?tag=t&limit=2&offset=4").json()
    assert body["total"] == 5 and len(body["memories"]) == 1


def test_by_tag_needs_a_tag(agent):
    assert_invalid(agent.get("/memory/by-tag"), "tag")
    assert_invalid(agent.get("/memory/by-tag?tag=%20"), "tag")
    assert_invalid(agent.get("/memory/by-tag?tag=t&limit=0"), "limit")


def test_by_tag_query_count_does_not_grow_with_rows(agent, mind):
    for i in range(30):
        remember(mind, f"k{i}", tags=["t", f"x{i}"])
    with CaptureQueriesContext(connection) as ctx:
        assert agent.get("/memory/by-tag?tag=t").json()["total"] == 30
    assert len(ctx.captured_queries) <= 3  # mind key, count, page


def test_by_tag_isolation(agent, mind, stranger_agent, other_human):
    remember(mind, "a", tags=["secret"])
    assert stranger_agent.get("/memory/by-tag?tag=secret").json()["total"] == 0
    assert_isolated(
        "/memory/by-tag?tag=secret",
        mind=mind,
        stranger_agent=stranger_agent,
        other_human=other_human,
    )
