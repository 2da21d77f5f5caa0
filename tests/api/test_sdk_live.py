"""The public client (synapse-memory-sdk) against a real server, unchanged."""

from __future__ import annotations

import pytest
from synapse_memory import Synapse
from synapse_memory.error import SynapseError

from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(live_server, owner_mind) -> Synapse:
    return Synapse(base_url=live_server.url, mind_key=owner_mind.key, max_retries=0)


def test_sdk_store_upsert_list_update_delete(sdk, owner_mind):
    created = sdk.memory.store(
        category="preference",
        key="preference_editor",
        content="Uses Neovim",
        tags=["Tools"],
        priority="high",
        expires_at=4102444800,
    )
    assert created["action"] == "created"
    assert created["id"].startswith("mem_")
    assert created["tags"] == ["tools"]
    assert created["expires_at"] == "2100-01-01T00:00:00Z"
    assert created["mind_id"] == owner_mind.mind.id

    upserted = sdk.memory.store(
        category="preference", key="preference_editor", content="Uses Helix"
    )
    assert upserted["action"] == "updated"
    assert upserted["id"] == created["id"]
    assert upserted["tags"] == ["tools"]  # omitted fields keep their value

    derived = sdk.memory.store(category="fact", content="Lives in Berlin")
    assert derived["key"].startswith("fact_lives_in_berlin_")

    listed = sdk.memory.list()
    assert listed["total"] == 2
    assert {m["id"] for m in listed["memories"]} == {created["id"], derived["id"]}
    assert sdk.memory.list(category="fact")["total"] == 1
    assert sdk.memory.list(tag="TOOLS")["memories"][0]["id"] == created["id"]
    assert len(sdk.memory.list(limit=1, offset=1)["memories"]) == 1

    updated = sdk.memory.update(created["id"], content="Uses Zed", priority="critical")
    assert updated["content"] == "Uses Zed"
    assert updated["priority"] == "critical"
    assert updated["tags"] == ["tools"]

    assert sdk.memory.delete(derived["id"]) == {"deleted": True, "id": derived["id"]}
    assert sdk.memory.list()["total"] == 1


def test_sdk_idempotency_key_replays(sdk):
    first = sdk.memory.store(category="note", content="Once", idempotency_key="abc-123")
    second = sdk.memory.store(category="note", content="Once", idempotency_key="abc-123")
    assert first == second
    assert Memory.objects.count() == 1
    with pytest.raises(SynapseError) as exc:
        sdk.memory.store(category="note", content="Twice", idempotency_key="abc-123")
    assert exc.value.status == 409


def test_sdk_source_forging_warns(sdk):
    stored = sdk.memory.store(category="fact", content="I am the user", source="user")
    assert stored["source"] == "agent"
    assert stored["warnings"]


def test_sdk_errors_are_4xx(sdk):
    with pytest.raises(SynapseError) as exc:
        sdk.memory.store(category="thoughts", content="x")
    assert exc.value.status == 400
    with pytest.raises(SynapseError) as exc:
        sdk.memory.update("mem_doesnotexist", content="x")
    assert exc.value.status == 404
    with pytest.raises(SynapseError) as exc:
        sdk.memory.delete("mem_doesnotexist")
    assert exc.value.status == 404


def test_sdk_recall_sees_stored_memories(sdk):
    sdk.memory.store(category="identity", key="user_name", content="Olive", priority="critical")
    text = sdk.memory.recall()
    assert "user_name" in text
    assert "Olive" in text
