"""GET /memory/{id}/related: memories sharing tags, most shared first, ties by recency."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, ids
from tests.factories import remember


def test_related_most_shared_first_then_recent(agent, mind):
    now = timezone.now()
    base = remember(mind, "base", tags=["docker", "deploy", "prod"], now=now)
    one_old = remember(mind, "one_old", tags=["docker"], now=now - timedelta(days=2))
    one_new = remember(mind, "one_new", tags=["prod", "other"], now=now - timedelta(days=1))
    three = remember(mind, "three", tags=["prod", "deploy", "docker"], now=now)
    two = remember(mind, "two", tags=["deploy", "docker"], now=now)
    remember(mind, "unrelated", tags=["python"])
    remember(mind, "untagged")
    body = agent.get(f"/memory/{base.pk}/related").json()
    assert ids(body) == [three.pk, two.pk, one_new.pk, one_old.pk]
    assert body["total"] == 4
    assert body["memories"][0]["shared_tags"] == ["prod", "deploy", "docker"]
    assert body["memories"][2]["shared_tags"] == ["prod"]
    assert base.pk not in ids(body)


def test_related_of_untagged_memory_is_empty(agent, mind):
    lonely = remember(mind, "lonely")
    remember(mind, "tagged", tags=["a"])
    body = agent.get(f"/memory/{lonely.pk}/related").json()
    assert body == {"memories": [], "total": 0, "limit": 100, "offset": 0}


def test_related_leaves_out_expired_and_pages(agent, mind):
    base = remember(mind, "base", tags=["t"])
    for i in range(3):
        remember(mind, f"k{i}", tags=["t"])
    remember(mind, "gone", tags=["t"], expires_at=timezone.now() - timedelta(seconds=5))
    assert agent.get(f"/memory/{base.pk}/related").json()["total"] == 3
    assert agent.get(f"/memory/{base.pk}/related?include_expired=true").json()["total"] == 4
    assert len(agent.get(f"/memory/{base.pk}/related?limit=2").json()["memories"]) == 2
    assert_invalid(agent.get(f"/memory/{base.pk}/related?offset=-1"), "offset")


def test_related_query_count(agent, mind):
    base = remember(mind, "base", tags=["a", "b"])
    for i in range(20):
        remember(mind, f"k{i}", tags=["a", "b", f"x{i}"])
    with CaptureQueriesContext(connection) as ctx:
        assert agent.get(f"/memory/{base.pk}/related").json()["total"] == 20
    assert len(ctx.captured_queries) <= 4  # mind key, the memory, count, page


def test_related_of_another_minds_memory_is_404(agent, mind, stranger_agent, other_human):
    base = remember(mind, "base", tags=["t"])
    remember(mind, "other", tags=["t"])
    missing = agent.get("/memory/mem_doesnotexist/related")
    assert missing.status_code == 404
    theirs = stranger_agent.get(f"/memory/{base.pk}/related")
    assert theirs.status_code == 404
    assert theirs.json() == missing.json()
    assert other_human.get(f"/memory/{base.pk}/related?mind={mind.pk}").status_code == 404
