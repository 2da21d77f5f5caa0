"""GET /memory/audit: who did what to which memory, when, with the previous values."""

from __future__ import annotations

import orjson
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from tests.api.memory_helpers import assert_invalid, assert_isolated, json_of


def test_audit_lists_entries_newest_first_with_old_values(agent, human, owner, owner_mind):
    stored = agent.post(
        "/memory", {"category": "fact", "key": "k", "content": "one"}, format="json"
    ).json()
    agent.put(f"/memory/{stored['id']}", {"content": "two"}, format="json")
    human.post(f"/memory/{stored['id']}/verify")
    human.delete(f"/memory/{stored['id']}")
    body = json_of(agent.get("/memory/audit"))
    assert set(body) == {"entries", "total"}
    assert body["total"] == 4
    assert [e["action"] for e in body["entries"]] == ["delete", "verify", "update", "create"]
    update = body["entries"][2]
    assert update["memory_id"] == stored["id"]
    assert update["key"] == "k" and update["category"] == "fact"
    assert update["actor"] == owner_mind.key[:11] and update["actor_type"] == "agent"
    assert update["changes"] == {"content": {"old": "one", "new": "two"}}
    assert update["at"].endswith("Z")
    delete = body["entries"][0]
    assert delete["actor"] == owner.email
    assert delete["changes"]["content"]["old"] == "two"


def test_audit_filters_by_action_and_memory(agent):
    a = agent.post("/memory", {"category": "fact", "content": "a"}, format="json").json()
    b = agent.post("/memory", {"category": "fact", "content": "b"}, format="json").json()
    agent.delete(f"/memory/{a['id']}")
    deletes = json_of(agent.get("/memory/audit?action=DELETE"))
    assert [e["memory_id"] for e in deletes["entries"]] == [a["id"]]
    only_b = json_of(agent.get(f"/memory/audit?memory={b['id']}"))
    assert [e["action"] for e in only_b["entries"]] == ["create"]
    page = json_of(agent.get("/memory/audit?limit=1&offset=1"))
    assert page["total"] == 3 and len(page["entries"]) == 1


def test_audit_bad_input_names_the_field(agent):
    body = assert_invalid(agent.get("/memory/audit?action=explode"), "action")
    assert "create, update, delete, verify, unverify" in body["fields"]["action"][0]
    assert_invalid(agent.get("/memory/audit?limit=0"), "limit")


def test_audit_query_count(agent):
    for i in range(15):
        agent.post("/memory", {"category": "fact", "content": f"c{i}"}, format="json")
    with CaptureQueriesContext(connection) as ctx:
        assert json_of(agent.get("/memory/audit"))["total"] == 15
    assert len(ctx.captured_queries) <= 3


def test_audit_isolation(agent, mind, stranger_agent, other_human):
    stored = agent.post("/memory", {"category": "fact", "content": "mine"}, format="json").json()
    assert json_of(stranger_agent.get("/memory/audit")) == {"entries": [], "total": 0}
    assert json_of(stranger_agent.get(f"/memory/audit?memory={stored['id']}"))["total"] == 0
    assert_isolated(
        "/memory/audit", mind=mind, stranger_agent=stranger_agent, other_human=other_human
    )


@override_settings(SYNAPSE_MAX_HISTORY_BYTES=200_000)
def test_syncs_rewriting_long_texts_keep_the_trail_within_the_history_budget(agent, mind):
    # The finding, small: syncs of 20 memories of 4.5 KB each, the content changed every
    # round. The trail holds at most the budget; what it folded stays listed, marked.
    for round_ in range(10):
        items = [
            {"category": "fact", "key": f"k{i}", "content": f"{round_} {i} " + "x" * 4_500}
            for i in range(20)
        ]
        assert agent.post("/memory/sync", {"memories": items}, format="json").status_code == 200
        usage = agent.get("/memory/stats").json()["usage"]
        assert usage["history_bytes"] <= usage["max_history_bytes"] == 200_000
    body = json_of(agent.get("/memory/audit?limit=1000"))
    assert body["total"] == len(body["entries"]) == 200  # every write is still listed
    oldest, newest = body["entries"][-1], body["entries"][0]
    assert oldest["action"] == "create" and oldest["changes"]["content"] == {"folded": True}
    assert set(oldest["changes"]) >= {"content", "tags", "priority"}
    assert newest["changes"]["content"]["new"].startswith("9 ")  # the newest are exact
    assert newest["changes"]["content"]["old"].startswith("8 ")
    held = [e["changes"] for e in body["entries"] if {"folded": True} not in e["changes"].values()]
    assert sum(len(orjson.dumps(changes)) for changes in held) <= 200_000


def test_the_audit_page_is_streamed(agent):
    agent.post("/memory", {"category": "fact", "content": "one"}, format="json")
    response = agent.get("/memory/audit?limit=1000")
    assert response.streaming and response["Content-Type"] == "application/json"
