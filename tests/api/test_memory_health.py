"""GET /memory/health: counts, unverified share, expiring soon, stale, and what to look at."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.hygiene.health import hygiene_check_due
from tests.api.memory_helpers import assert_isolated
from tests.factories import PERSON, remember


def test_health_of_a_tidy_mind_is_ok(agent, mind):
    remember(mind, "a", actor=PERSON)
    body = agent.get("/memory/health").json()
    assert body["status"] == "ok"
    assert body["attention"] == []
    assert body["total"] == 1 and body["verified"] == 1 and body["unverified_share"] == 0.0


def test_health_names_what_to_look_at(agent, mind):
    now = timezone.now()
    critical = remember(mind, "critical", priority="critical")
    soon = remember(mind, "soon", actor=PERSON, expires_at=now + timedelta(days=2))
    remember(mind, "later", actor=PERSON, expires_at=now + timedelta(days=30))
    old = remember(mind, "old", actor=PERSON, now=now - timedelta(days=120))
    gone = remember(mind, "gone", actor=PERSON, expires_at=now - timedelta(days=1))
    remember(mind, "plain")
    body = agent.get("/memory/health").json()
    assert body["status"] == "attention"
    assert body["total"] == 6 and body["live"] == 5 and body["expired"] == 1
    assert body["unverified"] == 2 and body["unverified_share"] == 0.4
    assert body["expiring_soon"] == 1 and body["stale"] == 1
    attention = {item["kind"]: item for item in body["attention"]}
    assert attention["unverified_important"]["ids"] == [critical.pk]
    assert attention["expiring_soon"]["ids"] == [soon.pk]
    assert attention["stale"]["ids"] == [old.pk]
    assert attention["expired"]["ids"] == [gone.pk]
    assert all(item["detail"].startswith("1 ") for item in body["attention"])


def test_health_query_count_is_fixed(agent, mind):
    now = timezone.now()
    for i in range(20):
        remember(mind, f"k{i}", priority="high", expires_at=now + timedelta(days=1))
    with CaptureQueriesContext(connection) as ctx:
        agent.get("/memory/health")
    # Mind key, aggregate, up to 4 attention lists; the stored hygiene counts, the proposals
    # (count and ids): the checks themselves run on the worker.
    assert len(ctx.captured_queries) <= 9


def test_health_isolation(mind, stranger_agent, other_human):
    remember(mind, "a", priority="critical")
    body = stranger_agent.get("/memory/health").json()
    assert body["total"] == 0 and body["attention"] == []
    assert_isolated(
        "/memory/health", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )


def test_health_counts_what_hygiene_finds(agent, human, mind):
    old = remember(mind, "office", content="The office is in Berlin")
    new = remember(mind, "office_now", content="The office is in Munich")
    remember(mind, "mug", content="Drinks coffee from a blue mug every morning")
    remember(mind, "mug2", content="Drinks coffee from a blue mug every morning at work")
    human.post(f"/memory/{old.pk}/verify")
    agent.post(f"/memory/{old.pk}/supersede", {"by": new.pk}, format="json")  # proposed
    before = agent.get("/memory/health").json()
    assert before["contradictions"] is None and before["duplicates"] is None  # not checked yet
    assert before["proposals"] == 1 and before["hygiene_checked_at"] is None
    assert hygiene_check_due() == 1 and hygiene_check_due() == 0  # until a write
    body = agent.get("/memory/health").json()
    assert body["hygiene_checked_at"] is not None
    assert body["proposals"] == 1 and body["contradictions"] == 1 and body["duplicates"] == 1
    kinds = {item["kind"]: item for item in body["attention"]}
    assert kinds["proposals"]["ids"] == [old.pk]
    assert set(kinds["contradictions"]["ids"]) <= {old.pk, new.pk}


def test_a_write_makes_the_mind_due_again(agent, mind, stranger_mind):
    remember(mind, "a", content="First")
    remember(stranger_mind.mind, "b", content="Theirs")
    assert hygiene_check_due() == 2
    remember(mind, "c", content="Second")
    assert hygiene_check_due() == 1
    later = timezone.now() + timedelta(hours=2)  # a mind nobody writes is checked hourly
    assert hygiene_check_due(now=later) == 2


def test_the_worker_thread_round_checks_and_never_raises(mind, monkeypatch):
    from memories import tasks

    remember(mind, "a", content="First")
    assert tasks.check_hygiene_logged() == 1

    def broken(**_):
        raise RuntimeError("database down")

    monkeypatch.setattr(tasks, "hygiene_check_due", broken)
    assert tasks.check_hygiene_logged() == 0  # logged; the next round tries again
