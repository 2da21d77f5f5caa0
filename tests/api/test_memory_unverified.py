"""GET /memory/unverified: the review queue, most important and least confident first."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.api.memory_helpers import assert_invalid, assert_isolated, ids
from tests.factories import PERSON, remember


def test_unverified_order_priority_then_confidence_then_recent(agent, mind):
    now = timezone.now()
    low = remember(mind, "low", priority="low", now=now)
    normal_sure = remember(mind, "normal_sure", confidence=0.9, now=now)
    normal_unsure = remember(mind, "normal_unsure", confidence=0.2, now=now)
    normal_newer = remember(mind, "normal_newer", confidence=0.9, now=now + timedelta(seconds=1))
    critical = remember(mind, "critical", priority="critical", now=now)
    remember(mind, "mine", actor=PERSON, priority="critical")  # verified: not in the queue
    body = agent.get("/memory/unverified").json()
    assert ids(body) == [
        critical.pk,
        normal_unsure.pk,
        normal_newer.pk,
        normal_sure.pk,
        low.pk,
    ]
    assert body["total"] == 5
    assert all(m["verified"] is False for m in body["memories"])


def test_unverified_limit_and_expired(agent, mind):
    for i in range(3):
        remember(mind, f"k{i}")
    remember(mind, "gone", expires_at=timezone.now() - timedelta(minutes=1))
    body = agent.get("/memory/unverified?limit=2").json()
    assert body["total"] == 3 and len(body["memories"]) == 2 and body["limit"] == 2
    assert agent.get("/memory/unverified?include_expired=1").json()["total"] == 4


def test_unverified_bad_limit(agent):
    assert_invalid(agent.get("/memory/unverified?limit=many"), "limit")
    assert_invalid(agent.get("/memory/unverified?limit=1001"), "limit")


def test_unverified_query_count(agent, mind):
    for i in range(25):
        remember(mind, f"k{i}")
    with CaptureQueriesContext(connection) as ctx:
        assert agent.get("/memory/unverified").json()["total"] == 25
    assert len(ctx.captured_queries) <= 3


def test_unverified_isolation(mind, stranger_agent, other_human):
    remember(mind, "a")
    assert stranger_agent.get("/memory/unverified").json()["total"] == 0
    assert_isolated(
        "/memory/unverified", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )
