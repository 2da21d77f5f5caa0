"""GET /memory/stats: totals by category, priority, source, verification and expiry, and
how many memories are embedded or queued for embedding."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.embeddings import outbox
from memories.models import Category, MemoryVector, Source
from tests.api.memory_helpers import assert_isolated
from tests.factories import PERSON, remember


def test_stats_totals(agent, mind):
    remember(mind, "a", category="identity", priority="critical", actor=PERSON, tags=["x"])
    remember(mind, "b", category="fact", priority="high", tags=["x", "y"])
    remember(mind, "c", category="fact", source="tool")
    remember(mind, "d", category="note", priority="low", expires_at=timezone.now() - timedelta(1))
    body = agent.get("/memory/stats").json()
    assert body["total"] == 4
    assert body["live"] == 3 and body["expired"] == 1
    assert body["verified"] == 1 and body["unverified"] == 3
    assert body["by_category"] == {
        **dict.fromkeys(Category.values, 0),
        "identity": 1,
        "fact": 2,
        "note": 1,
    }
    assert body["by_priority"] == {"critical": 1, "high": 1, "normal": 1, "low": 1}
    assert body["by_source"] == {
        **dict.fromkeys(Source.values, 0),
        "user": 1,
        "agent": 2,
        "tool": 1,
    }
    assert body["tags"] == 2


def test_stats_of_an_empty_mind(agent):
    body = agent.get("/memory/stats").json()
    assert body["total"] == 0
    assert set(body["by_priority"].values()) == {0}


def test_stats_is_a_fixed_number_of_queries(agent, mind):
    for i in range(40):
        remember(mind, f"k{i}", category=Category.values[i % 8], priority=["low", "high"][i % 2])
    with CaptureQueriesContext(connection) as ctx:
        assert agent.get("/memory/stats").json()["total"] == 40
    # mind key, GROUP BY, distinct tags, memories embedded, memories queued for embedding
    assert len(ctx.captured_queries) <= 5


def test_stats_isolation(mind, stranger_agent, other_human):
    remember(mind, "a")
    theirs = stranger_agent.get("/memory/stats").json()
    assert theirs["total"] == 0
    assert (theirs["usage"]["memories"], theirs["usage"]["history_bytes"]) == (0, 0)
    assert_isolated(
        "/memory/stats", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )


def test_stats_counts_embedded_and_pending_memories(agent, mind):
    remember(mind, "a")
    remember(mind, "b")
    body = agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (0, 2)
    outbox.embed_pending()
    remember(mind, "c")
    body = agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (2, 1)


def test_stats_counts_only_vectors_of_the_current_model(agent, mind):
    remember(mind, "a")
    outbox.embed_pending()
    MemoryVector.objects.update(model="an-older-model")
    body = agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (0, 0)


def test_stats_with_embeddings_off(agent, mind, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    remember(mind, "a")
    body = agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (0, 0)


def test_stats_embedding_counts_are_the_minds_own(mind, stranger_mind, agent, stranger_agent):
    remember(mind, "a")
    remember(mind, "b")
    outbox.embed_pending()
    remember(mind, "c")
    remember(stranger_mind.mind, "s")
    body = stranger_agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (0, 1)
    body = agent.get("/memory/stats").json()
    assert (body["embedded"], body["pending_embedding"]) == (2, 1)


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=1_000)
def test_stats_show_what_the_mind_holds_against_its_quotas(agent, human, mind):
    stored = agent.post("/memory", {"category": "fact", "content": "é" * 100}, format="json")
    usage = agent.get("/memory/stats").json()["usage"]
    assert usage["memories"] == 1 and usage["bytes"] == 200
    assert 200 < usage["history_bytes"] <= usage["max_history_bytes"] == 1_000
    assert usage["max_memories"] == 10_000 and usage["max_bytes"] == 50 * 1024 * 1024
    agent.put(f"/memory/{stored.json()['id']}", {"content": "x" * 900}, format="json")
    usage = human.get(f"/memory/stats?mind={mind.pk}").json()["usage"]
    assert usage["bytes"] == 900 and usage["history_bytes"] <= 1_000
