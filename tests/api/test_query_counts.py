"""Every endpoint answers in a fixed number of queries, however many memories the mind holds.

Each request is counted twice: with 4 memories in the mind and again with 40. The counts
must be equal (no query per memory: an N+1 shows up here, in `make test`, without timing
anything) and at most the ceiling written beside the endpoint (a new query per request is
a decision, made by raising the number here).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.hygiene.duplicates import CHECK_MAX_ITEMS
from memories.models import Memory
from tests.factories import PERSON, remember

# Four memories at first, so every priority (and each kind of health attention) is there
# before the mind grows tenfold.
SIZES = (4, 40)

# path (or a callable giving it from the first memory's id), ceiling; GETs by the agent.
READS = {
    "list": ("/memory", 3),
    "list, filtered": ("/memory?tag=shared&category=fact&verified=false", 3),
    "search": ("/memory/search?q=shared&mode=keyword", 2),
    "search, tag": ("/memory/search?q=note&tag=shared&mode=keyword", 2),
    # By meaning too (the default): the mind's vectors' change marker first (none here).
    "search, hybrid": ("/memory/search?q=shared", 3),
    "search, semantic": ("/memory/search?q=shared&mode=semantic", 2),
    "semantic-search": ("/memory/semantic-search?q=shared", 2),
    # The header's counts (two index-only aggregates) come before the rows, which are sent
    # as they are read.
    "recall text": ("/memory/recall", 4),
    "recall budget": ("/memory/recall?budget=50", 6),
    "recall json": ("/memory/recall?format=json", 4),
    "by-tag": ("/memory/by-tag?tag=shared", 3),
    "unverified": ("/memory/unverified", 3),
    "expiring": ("/memory/expiring?within=30d", 3),
    "related": (lambda first: f"/memory/{first}/related", 4),
    "tags": ("/memory/tags", 4),
    # With the memories embedded and queued for embedding: one count each.
    "stats": ("/memory/stats", 5),
    # With the stored hygiene counts and the proposals waiting (their count and ids).
    "health": ("/memory/health", 8),
    "audit": ("/memory/audit", 3),
    # PostgreSQL: one more, the mind's lock that orders `until` after the writes it covers.
    # The page's end (one query; one more when the window overflows the page), then created,
    # updated and deleted, each streamed.
    "diff": ("/memory/diff?since=0", 8 if connection.vendor == "postgresql" else 7),
    "get one": (lambda first: f"/memory/{first}", 2),
    "export json": ("/mind/export?format=json", 2),
    "export csv": ("/mind/export?format=csv", 2),
}


def fill(mind, upto: int) -> str:
    """Grow the mind to `upto` memories (tagged, every priority, a third by a person, some
    expiring soon, the first expired); returns the id of the first."""
    now = timezone.now()
    have = Memory.objects.filter(mind=mind).count()
    for i in range(have, upto):
        remember(
            mind,
            f"fact_{i:03d}",
            f"Shared note {i} about the deploy server.",
            tags=["shared", f"t{i % 4}"],
            priority=["critical", "high", "normal", "low"][i % 4],
            expires_at=now + timedelta(days=3) if i % 5 == 1 else None,
            **({"actor": PERSON} if i % 3 == 0 else {}),
        )
    Memory.objects.filter(mind=mind, key="fact_000").update(expires_at=now - timedelta(days=1))
    return Memory.objects.filter(mind=mind).order_by("created_at", "key").first().pk


def count(client, method: str, path: str, **kw) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(path, **kw)
        if response.streaming:  # the queries run while the body is sent
            b"".join(response.streaming_content)
    assert 200 <= response.status_code < 300, response.content
    return len(queries)


@pytest.mark.parametrize("name", READS)
def test_reads_do_not_grow_with_the_mind(agent, mind, name):
    path, ceiling = READS[name]
    counts = []
    for size in SIZES:
        first = fill(mind, size)
        url = path(first) if callable(path) else path
        count(agent, "get", url)  # warm: a process reads some things once (a mind's vectors)
        counts.append(count(agent, "get", url))
    assert counts[0] == counts[1], (
        f"{name}: {counts[0]} queries at {SIZES[0]} memories, {counts[1]} at {SIZES[1]}"
    )
    assert counts[1] <= ceiling, f"{name}: {counts[1]} queries, ceiling {ceiling}"


def test_human_list_does_not_grow_with_the_mind(human, mind):
    counts = []
    for size in SIZES:
        fill(mind, size)
        counts.append(count(human, "get", "/memory"))
    assert counts[0] == counts[1]
    assert counts[1] <= 4


def test_minds_list_does_not_grow_with_the_minds(human, owner):
    from minds.services import mind_create

    counts = [count(human, "get", "/minds")]
    for n in range(5):
        mind_create(owner=owner, name=f"Extra {n}")
    counts.append(count(human, "get", "/minds"))
    assert counts[0] == counts[1]
    assert counts[1] <= 2


def test_store_does_not_grow_with_the_mind(agent, mind):
    counts = []
    for size in SIZES:
        fill(mind, size)
        # Found by the near-repeat check's query (the word "shared"), close to none.
        content = {SIZES[0]: "Shared apples", SIZES[1]: "Shared quiet harbour"}[size]
        body = {"category": "note", "key": f"note_new_{size}", "content": content, "tags": ["a"]}
        counts.append(count(agent, "post", "/memory", data=body, format="json"))
    assert counts[0] == counts[1]
    # Mind Key, BEGIN, the lookup, the mind's usage (its quota), the memory, its tags, its
    # audit row, its span, the mind's enabled webhooks (the outbox's one read), its embedding
    # job, the near-repeat check's full-text query and its read of the candidates, COMMIT;
    # PostgreSQL adds a savepoint around the insert (a concurrent insert of the key is
    # settled there).
    assert counts[1] <= (13 if connection.vendor == "sqlite" else 15), counts


@pytest.mark.parametrize(
    ("verb", "body", "ceiling"),
    # Each with the mind's usage: the content's size changes; and the embedding outbox: a
    # changed text is queued and its old vector deleted, a deleted memory's job and vector go,
    # as do the memories it superseded (current again), its proposals and kept pairs; and the
    # mind's enabled webhooks are read (the outbox); its open span ends (a patch opens the
    # next).
    [("patch", {"content": "changed", "tags": ["x"]}, 15), ("delete", None, 17)],
)
def test_update_and_delete_do_not_grow_with_the_mind(agent, mind, verb, body, ceiling):
    counts = []
    for size in SIZES:
        first = fill(mind, size)
        target = Memory.objects.filter(mind=mind).exclude(pk=first).order_by("key").last()
        kw = {"data": body, "format": "json"} if body else {}
        counts.append(count(agent, verb, f"/memory/{target.pk}", **kw))
    assert counts[0] == counts[1]
    # PostgreSQL: one more, the mind's row lock that writers of one mind take in turn.
    assert counts[1] <= ceiling + (connection.vendor == "postgresql"), counts


def test_sync_grows_by_the_near_repeat_check_alone(agent, mind):
    def sync(size: int, start: int) -> int:
        items = [
            # One word no other memory holds: the check's query finds no candidate.
            {"category": "note", "key": f"note_sync_{start + i}", "content": f"w{start + i}"}
            for i in range(size)
        ]
        return count(agent, "post", "/memory/sync", data={"memories": items}, format="json")

    small, large = sync(SIZES[0], 0), sync(SIZES[1], 1000)
    # One full-text query per item (memories/hygiene/duplicates.py), nothing else per item.
    assert large - small == SIZES[1] - SIZES[0]
    # Mind Key, the write's transaction (a savepoint inside the test's: 2), the lookup, the
    # mind's usage (its quota), the memories, their tags, their audit rows, their spans, the
    # mind's enabled webhooks, their embedding jobs; PostgreSQL adds the mind's row lock.
    assert small - SIZES[0] <= (12 if connection.vendor == "postgresql" else 11), small
    # Past CHECK_MAX_ITEMS items the check is skipped: the sync no longer grows.
    over = CHECK_MAX_ITEMS + 1
    assert sync(over, 2000) == sync(over + 50, 3000) == small - SIZES[0]


def test_verify_does_not_grow_with_the_mind(human, mind):
    counts = []
    for size in SIZES:
        fill(mind, size)
        target = Memory.objects.filter(mind=mind, verified=False).order_by("key").last()
        counts.append(count(human, "post", f"/memory/{target.pk}/verify"))
    assert counts[0] == counts[1]
    # ... as a store: its audit row is counted in the mind's history (the usage update), and
    # the mind's enabled webhooks are read (the outbox); its open span ends, the next opens.
    assert counts[1] <= (12 if connection.vendor == "postgresql" else 11), counts
