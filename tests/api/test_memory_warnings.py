"""Server-owned fields in a body are ignored and named in `warnings`, on every write path:
store, update (PUT and PATCH), sync item, import item and MCP `remember`."""

from __future__ import annotations

import pytest

from memories.models import Memory
from tests.factories import remember
from tests.mcp_server.test_tools import Mcp

pytestmark = pytest.mark.django_db

SERVER_OWNED = {"verified": True, "created_at": "2020-01-01T00:00:00Z", "id": "mem_forged"}


def named(warnings: list[str], *names: str) -> bool:
    text = " ".join(warnings)
    return all(name in text for name in names)


@pytest.mark.parametrize("method", ["put", "patch"])
def test_an_update_names_the_fields_it_ignored(agent, mind, method):
    memory = remember(mind, "k", "old")
    body = {"content": "new", **SERVER_OWNED}
    response = getattr(agent, method)(f"/memory/{memory.pk}", body, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert named(answer["warnings"], "verified", "created_at", "id")
    assert answer["content"] == "new" and answer["verified"] is False
    assert answer["id"] == memory.pk and answer["created_at"] != "2020-01-01T00:00:00.000Z"


def test_an_agents_update_asking_for_source_user_is_told_why_not(agent, mind):
    memory = remember(mind, "k", "old")
    response = agent.patch(f"/memory/{memory.pk}", {"source": "user"}, format="json")
    assert response.status_code == 200
    assert response.json()["source"] == "agent"
    assert named(response.json()["warnings"], "user")


def test_an_update_without_such_fields_has_no_warnings(agent, mind):
    memory = remember(mind, "k", "old")
    response = agent.patch(f"/memory/{memory.pk}", {"content": "new"}, format="json")
    assert response.json()["warnings"] == []


def test_sync_and_import_items_name_the_fields_they_ignored(agent, mind):
    item = {"category": "fact", "key": "k", "content": "x", **SERVER_OWNED}
    synced = agent.post("/memory/sync", {"memories": [item]}, format="json").json()
    assert named(synced["results"][0]["warnings"], "verified", "created_at", "id")
    item = {**item, "key": "k2", "mind_id": mind.pk, "expired": False}
    imported = agent.post("/mind/import", {"memories": [item]}, format="json").json()
    assert named(imported["results"][0]["warnings"], "verified", "created_at", "id", "expired")
    assert not Memory.objects.filter(pk="mem_forged").exists()


def test_a_persons_import_names_only_what_it_did_not_keep(human, mind):
    item = {"category": "fact", "key": "k", "content": "x", "source": "user", **SERVER_OWNED}
    answer = human.post(f"/mind/import?mind={mind.pk}", {"memories": [item]}, format="json")
    (result,) = answer.json()["results"]
    assert named(result["warnings"], "created_at", "id")
    assert "verified" not in " ".join(result["warnings"])  # kept: the person's own verification
    assert Memory.objects.get(mind=mind, key="k").verified


def test_mcp_remember_names_the_fields_it_ignored(owner_mind):
    mcp = Mcp(owner_mind.key)
    stored = mcp.ok("remember", {"category": "fact", "content": "x", "verified": True})
    assert named(stored["warnings"], "verified")
