"""A mind's quotas over HTTP: a write that would grow a full mind is a 409 naming the limit,
on every face that writes (store, update, sync, import, MCP)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from memories.models import Memory
from tests.factories import remember

pytestmark = pytest.mark.django_db


def assert_quota(response, setting: str) -> dict:
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["error"] == "quota_exceeded"
    assert setting in body["detail"] and "Nothing was written" in body["detail"]
    return body


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=2)
def test_a_full_mind_refuses_new_memories_on_every_path(agent, human, mind):
    remember(mind, "a")
    remember(mind, "b")
    new = {"category": "fact", "key": "c", "content": "x"}
    assert_quota(agent.post("/memory", new, format="json"), "SYNAPSE_MAX_MEMORIES_PER_MIND")
    assert_quota(agent.post("/memory/sync", {"memories": [new]}, format="json"), "MEMORIES")
    assert_quota(human.post("/mind/import", {"memories": [new]}, format="json"), "MEMORIES")
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    answer = agent.post(
        "/mcp",
        {**rpc, "params": {"name": "remember", "arguments": new}},
        format="json",
        HTTP_ACCEPT="application/json",
    ).json()["result"]
    assert answer["isError"] and "SYNAPSE_MAX_MEMORIES_PER_MIND" in answer["content"][0]["text"]
    assert Memory.objects.filter(mind=mind).count() == 2
    # What it holds still changes; a delete makes room.
    same = {"category": "fact", "key": "a", "content": "changed"}
    assert agent.post("/memory", same, format="json").status_code == 200
    first = Memory.objects.get(mind=mind, key="a")
    assert agent.delete(f"/memory/{first.pk}").status_code == 200
    assert agent.post("/memory", new, format="json").status_code == 201


@override_settings(SYNAPSE_MAX_MIND_BYTES=10)
def test_growing_content_past_the_bytes_quota_is_409(agent, mind):
    memory = remember(mind, "a", "12345678")
    response = agent.patch(f"/memory/{memory.pk}", {"content": "12345678901"}, format="json")
    assert_quota(response, "SYNAPSE_MAX_MIND_BYTES")
    assert (
        agent.patch(f"/memory/{memory.pk}", {"content": "short"}, format="json").status_code == 200
    )
    memory.refresh_from_db()
    assert memory.content == "short"


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=3)
def test_a_sync_that_would_cross_the_quota_writes_nothing(agent, mind):
    remember(mind, "a")
    items = [{"category": "fact", "key": k, "content": "x"} for k in "abcd"]  # 3 new
    body = assert_quota(agent.post("/memory/sync", {"memories": items}, format="json"), "3")
    assert "would add 3" in body["detail"]
    assert Memory.objects.filter(mind=mind).count() == 1
    answer = agent.post("/memory/sync", {"memories": items[:3]}, format="json").json()
    assert answer["created"] == 2


@override_settings(SYNAPSE_MAX_MEMORIES_PER_MIND=1)
def test_the_quota_is_per_mind(agent, mind, stranger_agent):
    remember(mind, "a")
    new = {"category": "fact", "key": "b", "content": "x"}
    assert agent.post("/memory", new, format="json").status_code == 409
    assert stranger_agent.post("/memory", new, format="json").status_code == 201
