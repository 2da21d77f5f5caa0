"""The overview's counts of memories that are no rows (a mind as of a moment) follow the
same rules as the counts the database makes: the two renderings held together."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from memories.models import Memory, Priority
from memories.selectors import (
    EXPIRING_SOON,
    STALE_AFTER,
    counts_of,
    memory_counts,
    memory_overview,
    overview_of,
)
from tests.factories import memory_row

NOW = datetime(2026, 12, 4, 18, 30, tzinfo=UTC)


def _every_kind(mind) -> None:
    """A memory for each mix of what the counts look at: expiry (none, past, soon, later,
    exactly now), superseded or not, verified or not, priority, stale or fresh."""
    expiries = [None, NOW - timedelta(days=1), NOW, NOW + EXPIRING_SOON, NOW + EXPIRING_SOON * 2]
    updated = [NOW - STALE_AFTER - timedelta(days=1), NOW - timedelta(days=1)]
    successor = memory_row(mind, "successor", category="note")
    mixes = itertools.product(expiries, (False, True), (False, True), Priority, updated)
    for n, (expires, superseded, verified, priority, at) in enumerate(mixes):
        memory = memory_row(
            mind,
            f"k{n}",
            category=["fact", "preference", "skill"][n % 3],
            expires_at=expires,
            verified=verified,
            priority=priority,
            superseded_by=successor if superseded else None,
        )
        Memory.objects.filter(pk=memory.pk).update(updated_at=at)


def test_counts_of_matches_memory_counts(mind):
    _every_kind(mind)
    rows = list(Memory.objects.filter(mind=mind))
    assert counts_of(rows, now=NOW) == memory_counts(mind=mind, now=NOW)
    assert all(counts_of(rows, now=NOW).values())


def test_overview_of_matches_memory_overview(mind):
    _every_kind(mind)
    rows = list(Memory.objects.filter(mind=mind))
    in_python, in_sql = overview_of(rows, now=NOW), memory_overview(mind=mind, now=NOW)
    assert in_python.counts == in_sql.counts
    assert in_python.by_category == in_sql.by_category
    assert in_python.by_priority == in_sql.by_priority
    assert in_python.writes == []


def test_no_memories_counts_zero():
    overview = overview_of([], now=NOW)
    assert set(overview.counts.values()) == {0}
    assert {n for _, n in overview.by_category} == {0}
