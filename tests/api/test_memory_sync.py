"""POST /memory/sync: bulk upsert, each item by POST /memory's rules, per-item results."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import Memory, MemoryEvent, MemoryTag
from memories.rules import derive_key
from tests.api.memory_helpers import assert_invalid
from tests.factories import PERSON, remember


def sync(client, memories, **kw):
    return client.post("/memory/sync", {"memories": memories}, format="json", **kw)


def test_sync_creates_updates_and_reports_per_item(agent, mind):
    kept = remember(mind, "kept", "same")
    changed = remember(mind, "changed", "old")
    response = sync(
        agent,
        [
            {"category": "fact", "key": "new", "content": "fresh", "tags": [" Docker ", "docker"]},
            {"category": "fact", "key": "kept", "content": "same"},
            {"category": "fact", "key": "changed", "content": "new text", "priority": "high"},
            {"category": "preference", "content": "Likes tea"},
        ],
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["created"], body["updated"], body["unchanged"]) == (2, 1, 1)
    assert body["errors"] == []
    assert [(r["index"], r["key"], r["action"]) for r in body["results"]] == [
        (0, "new", "created"),
        (1, "kept", "unchanged"),
        (2, "changed", "updated"),
        (3, derive_key(category="preference", content="Likes tea"), "created"),
    ]
    assert body["results"][1]["id"] == kept.pk and body["results"][2]["id"] == changed.pk
    new = Memory.objects.get(pk=body["results"][0]["id"])
    assert new.tags == ["docker"] and new.source == "agent" and not new.verified
    assert new.confidence == 0.7
    assert list(MemoryTag.objects.filter(memory=new).values_list("tag", flat=True)) == ["docker"]
    changed.refresh_from_db()
    assert changed.content == "new text" and changed.priority == 2
    actions = MemoryEvent.objects.filter(mind=mind).values_list("key", "action")
    assert sorted(actions) == sorted(
        [
            ("kept", "create"),
            ("changed", "create"),
            ("new", "create"),
            ("changed", "update"),
            (body["results"][3]["key"], "create"),
        ]
    )


def test_one_bad_item_does_not_block_the_others(agent, mind):
    body = sync(
        agent,
        [
            {"category": "fact", "key": "good", "content": "ok"},
            {"category": "thoughts", "content": "bad category"},
            "not an object",
            {"category": "fact", "content": ""},
            {"category": "fact", "content": "x", "contnet": "typo"},
            {"category": "fact", "content": "x", "tags": [f"t{i}" for i in range(21)]},
            {"category": "fact", "content": "x", "priority": None},
            {"content": "no category"},
            {"category": "fact", "key": "good2", "content": "ok too"},
        ],
    ).json()
    assert body["created"] == 2
    assert [r["key"] for r in body["results"]] == ["good", "good2"]
    errors = {e["index"]: e for e in body["errors"]}
    assert sorted(errors) == [1, 2, 3, 4, 5, 6, 7]
    assert "category" in errors[1]["fields"] and errors[1]["error"] == "invalid"
    assert "identity" in errors[1]["detail"]
    assert "non_field_errors" in errors[2]["fields"]
    assert "content" in errors[3]["fields"]
    assert "contnet" in errors[4]["fields"]
    assert "tags" in errors[5]["fields"]
    assert "priority" in errors[6]["fields"]
    assert "category" in errors[7]["fields"]
    assert Memory.objects.filter(mind=mind).count() == 2
    assert MemoryEvent.objects.filter(mind=mind).count() == 2


def test_sync_keeps_the_source_and_verification_rules(agent, human, mind, owner):
    verified = remember(mind, "verified", "person said so", actor=PERSON)
    body = sync(
        agent,
        [
            {"category": "fact", "key": "forged", "content": "forged x", "source": "user"},
            {"category": "fact", "key": "tooled", "content": "tooled y", "source": "tool"},
            {"category": "fact", "key": "verified", "content": "agent rewrote it"},
        ],
    ).json()
    forged = Memory.objects.get(mind=mind, key="forged")
    assert forged.source == "agent" and not forged.verified
    assert body["results"][0]["warnings"] and "warnings" not in body["results"][1]
    assert Memory.objects.get(mind=mind, key="tooled").source == "tool"
    verified.refresh_from_db()
    assert not verified.verified and verified.verified_by == ""

    by_person = sync(human, [{"category": "fact", "key": "mine", "content": "y"}]).json()
    mine = Memory.objects.get(pk=by_person["results"][0]["id"])
    assert mine.source == "user" and mine.verified and mine.verified_by == owner.email


def test_repeated_key_in_one_call_is_applied_in_order(agent, mind):
    body = sync(
        agent,
        [
            {"category": "fact", "key": "k", "content": "first", "tags": ["a"]},
            {"category": "fact", "key": "other", "content": "o"},
            {"category": "fact", "key": "k", "content": "second"},
            {"category": "note", "key": "k", "content": "another category, another memory"},
        ],
    ).json()
    results = body["results"]
    assert [r["action"] for r in results] == ["created", "created", "updated", "created"]
    assert results[0]["id"] == results[2]["id"] != results[3]["id"]
    memory = Memory.objects.get(mind=mind, category="fact", key="k")
    assert memory.content == "second" and memory.tags == ["a"]


def test_sync_body_must_be_a_list_of_at_most_1000(agent, mind):
    assert_invalid(agent.post("/memory/sync", {}, format="json"), "memories")
    assert_invalid(agent.post("/memory/sync", {"memories": {}}, format="json"), "memories")
    too_many = [{"category": "note", "content": f"n{i}"} for i in range(1001)]
    body = assert_invalid(sync(agent, too_many), "memories")
    assert "1000" in body["detail"]
    assert Memory.objects.count() == 0
    assert sync(agent, []).json() == {
        "created": 0,
        "updated": 0,
        "unchanged": 0,
        "results": [],
        "errors": [],
    }


def test_sync_of_1000_new_memories_takes_a_few_queries(agent, mind):
    items = [
        {"category": "note", "key": f"n{i}", "content": f"note {i}", "tags": ["a", f"t{i % 5}"]}
        for i in range(1000)
    ]
    with CaptureQueriesContext(connection) as ctx:
        body = sync(agent, items).json()
    assert body["created"] == 1000
    assert len(ctx.captured_queries) < 60  # batched INSERTs, not one per memory
    assert MemoryTag.objects.filter(mind=mind).count() == 2000
    assert MemoryEvent.objects.filter(mind=mind, action="create").count() == 1000
    again = sync(agent, items).json()
    assert again["unchanged"] == 1000


def test_sync_honours_idempotency_key(agent, mind):
    items = [{"category": "fact", "key": "k", "content": "once"}]
    first = sync(agent, items, HTTP_IDEMPOTENCY_KEY="sync-1")
    second = sync(agent, items, HTTP_IDEMPOTENCY_KEY="sync-1")
    assert second.content == first.content
    assert second["Idempotent-Replayed"] == "true"
    assert MemoryEvent.objects.filter(mind=mind).count() == 1
    other = sync(
        agent, [{"category": "fact", "key": "k", "content": "twice"}], HTTP_IDEMPOTENCY_KEY="sync-1"
    )
    assert other.status_code == 409
    assert Memory.objects.get(mind=mind, key="k").content == "once"


def test_sync_isolation(agent, mind, stranger_agent, stranger_mind, other_human):
    mine = remember(mind, "k", "mine")
    body = sync(stranger_agent, [{"category": "fact", "key": "k", "content": "theirs"}]).json()
    assert body["created"] == 1 and body["results"][0]["id"] != mine.pk
    mine.refresh_from_db()
    assert mine.content == "mine"
    assert Memory.objects.get(pk=body["results"][0]["id"]).mind_id == stranger_mind.mind.pk
    refused = sync(
        agent, [{"category": "fact", "key": "x", "content": "y", "mind_id": stranger_mind.mind.pk}]
    ).json()
    assert refused["errors"][0]["fields"].keys() == {"mind_id"}
    response = other_human.post(
        f"/memory/sync?mind={mind.pk}",
        {"memories": [{"category": "fact", "key": "k", "content": "hijack"}]},
        format="json",
    )
    assert response.status_code == 404
    mine.refresh_from_db()
    assert mine.content == "mine"


def test_synced_creates_and_updates_reach_the_search_index(agent, mind):
    sync(agent, [{"category": "fact", "key": "k", "content": "Deploys with Kubernetes"}])
    assert agent.get("/memory/search?q=kubernetes").json()["total"] == 1
    sync(
        agent, [{"category": "fact", "key": "k", "content": "Deploys with Nomad", "tags": ["ops"]}]
    )
    assert agent.get("/memory/search?q=kubernetes").json()["total"] == 0
    assert agent.get("/memory/search?q=nomad").json()["total"] == 1
    assert agent.get("/memory/by-tag?tag=ops").json()["total"] == 1


def test_sync_of_1000_changed_memories_is_batched(agent, mind):
    items = [
        {"category": "note", "key": f"n{i}", "content": f"v1 {i}", "tags": ["a"]}
        for i in range(1000)
    ]
    sync(agent, items)
    for item in items:
        item["content"] = item["content"].replace("v1", "v2")
        item["tags"] = ["b"]
    with CaptureQueriesContext(connection) as ctx:
        body = sync(agent, items).json()
    assert body["updated"] == 1000
    assert len(ctx.captured_queries) < 20
    assert set(MemoryTag.objects.filter(mind=mind).values_list("tag", flat=True)) == {"b"}
    assert MemoryEvent.objects.filter(mind=mind, action="update").count() == 1000
    assert Memory.objects.filter(mind=mind, content__startswith="v2").count() == 1000


def test_a_confidence_too_big_for_a_float_is_an_item_error_not_a_failed_batch(agent, mind):
    body = sync(
        agent,
        [
            {"category": "fact", "key": "huge", "content": "x", "confidence": 10**400},
            {"category": "fact", "key": "fine", "content": "ok", "confidence": 0.5},
        ],
    ).json()
    assert [r["key"] for r in body["results"]] == ["fine"]
    assert body["errors"][0]["index"] == 0 and "confidence" in body["errors"][0]["fields"]
    assert list(Memory.objects.filter(mind=mind).values_list("key", flat=True)) == ["fine"]
