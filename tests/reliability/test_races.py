"""Races: concurrent writers end in a consistent state and never in a 5xx.

- Many requests upserting one (category, key) at once, over real HTTP against gunicorn's
  two worker processes: one memory per key, exactly one "created", no 5xx.
- Overlapping bulk syncs: every key once, no 5xx.
- A person verifying while the agent keeps changing the content: the final row is verified
  only if the last content change came before the last verification (a human confirmed the
  text that is stored, never an older one).
- Stores racing into a nearly full mind, and creates racing for an account's last mind:
  the quota holds exactly.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.db import connections

from core.errors import QuotaExceeded
from memories.models import Memory, MemoryEvent
from memories.services import memory_upsert, memory_verify
from minds.models import Mind
from minds.services import mind_create
from tests.factories import AGENT, PERSON
from tests.reliability.harness import GunicornServer

THREADS = 8


def run_together(count: int, work) -> list[BaseException]:
    """Run work(i) in `count` threads released at once; return what they raised."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = GunicornServer(tmp_path_factory.mktemp("races"))
    server.key = server.create_mind("races@example.com")
    server.start()
    yield server
    server.stop()


@pytest.mark.slow
def test_racing_upserts_of_one_key_over_http_make_one_memory(server):
    keys = [f"race_{n}" for n in range(10)]
    statuses: dict[str, list[int]] = {key: [] for key in keys}
    lock = threading.Lock()

    def post(i: int) -> None:
        client = server.client(token=server.key)
        try:
            for key in keys:  # every thread walks the keys in step: 8 writers per key at once
                reply = client.request(
                    "POST",
                    "/memory",
                    json_body={"category": "fact", "key": key, "content": f"writer {i}"},
                )
                with lock:
                    statuses[key].append(reply.status)
        finally:
            client.close()

    assert run_together(THREADS, post) == []
    for key in keys:
        assert sorted(statuses[key]) == [200] * (THREADS - 1) + [201], (key, statuses[key])
    client = server.client(token=server.key)
    listed = client.request("GET", "/memory?limit=1000").json()["memories"]
    client.close()
    assert Counter(m["key"] for m in listed if m["key"] in keys) == dict.fromkeys(keys, 1)


@pytest.mark.slow
def test_overlapping_bulk_syncs_over_http_store_each_key_once(server):
    items = [{"category": "note", "key": f"sync_race_{n}", "content": "x"} for n in range(50)]
    statuses: list[int] = []

    def sync(i: int) -> None:
        client = server.client(token=server.key)
        try:
            body = {"memories": [{**item, "content": f"v{i}"} for item in items]}
            statuses.append(client.request("POST", "/memory/sync", json_body=body).status)
        finally:
            client.close()

    assert run_together(4, sync) == []
    assert statuses == [200] * 4
    client = server.client(token=server.key)
    listed = client.request("GET", "/memory?category=note&limit=1000").json()["memories"]
    client.close()
    synced = Counter(m["key"] for m in listed if m["key"].startswith("sync_race_"))
    assert synced == {item["key"]: 1 for item in items}


@pytest.mark.django_db(transaction=True)
def test_verification_racing_agent_edits_never_blesses_unseen_content(mind):
    memory = memory_upsert(
        mind=mind, actor=AGENT, category="fact", key="contested", content="v0"
    ).memory
    rounds = 25

    def work(i: int) -> None:
        for n in range(rounds):
            if i % 2:
                memory_upsert(
                    mind=mind, actor=AGENT, category="fact", key="contested", content=f"{i}-{n}"
                )
            else:
                memory_verify(memory=memory, actor=PERSON)

    assert run_together(4, work) == []
    memory.refresh_from_db()
    events = list(MemoryEvent.objects.filter(memory_id=memory.pk).order_by("pk"))
    content_changes = [e for e in events if "content" in e.changes]
    verifications = [e for e in events if e.action == MemoryEvent.Action.VERIFY]
    assert len(content_changes) > 1 and verifications  # they did interleave
    # The audit trail agrees with the row, in commit order.
    assert events[-1].changes.get("verified", {}).get("new", memory.verified) == memory.verified
    if memory.verified:
        assert content_changes[-1].pk < verifications[-1].pk
        assert memory.verified_at >= content_changes[-1].at
    else:
        assert content_changes[-1].pk > verifications[-1].pk
    # Every verification in the trail blessed the content stored at that moment.
    content = "v0"
    for event in events:
        if "content" in event.changes:
            content = event.changes["content"]["new"]
            assert event.changes.get("verified", {}).get("new", False) is False or (
                event.actor_type == "user"
            )
    assert content == memory.content
    assert Memory.objects.filter(key="contested").count() == 1


@pytest.mark.django_db(transaction=True)
def test_racing_stores_into_a_nearly_full_mind_never_pass_its_quota(mind, settings):
    settings.SYNAPSE_MAX_MEMORIES_PER_MIND = 5
    for n in range(3):
        memory_upsert(mind=mind, actor=AGENT, category="fact", key=f"held_{n}", content="x")
    refused: list[int] = []

    def work(i: int) -> None:
        try:
            memory_upsert(mind=mind, actor=AGENT, category="fact", key=f"new_{i}", content="x")
        except QuotaExceeded:
            refused.append(i)

    assert run_together(THREADS, work) == []
    assert len(refused) == THREADS - 2
    mind.refresh_from_db()
    assert Memory.objects.filter(mind=mind).count() == mind.stored_memories == 5


@pytest.mark.django_db(transaction=True)
def test_racing_creates_never_pass_the_minds_per_account(owner, mind, settings):
    settings.SYNAPSE_MAX_MINDS_PER_USER = 3
    refused: list[int] = []

    def work(i: int) -> None:
        try:
            mind_create(owner=owner, name=f"Racer {i}")
        except QuotaExceeded:
            refused.append(i)

    assert run_together(THREADS, work) == []
    assert len(refused) == THREADS - 2
    assert Mind.objects.filter(owner=owner).count() == 3
