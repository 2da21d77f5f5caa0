"""The MCP tools and resources: the same rules as the REST API, errors as tool results."""

from __future__ import annotations

import json
from datetime import timedelta
from functools import partial

import pytest
from django.test import Client
from django.utils import timezone

from memories.models import Memory, Priority
from memories.recall import CHARS_PER_TOKEN, DEFAULT_BUDGET, MAX_BUDGET
from tests.factories import SYSTEM, many_memories, remember
from tests.mcp_server import TOOLS

pytestmark = pytest.mark.django_db


class Mcp:
    """A JSON-RPC caller holding one Mind Key."""

    def __init__(self, key: str):
        self.key = key
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
        self.next_id = 0

    def rpc(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        response = self.client.post("/mcp", data=json.dumps(body), content_type="application/json")
        assert response.status_code == 200, response.content
        return response.json()

    def call(self, name: str, arguments: dict | None = None) -> dict:
        answer = self.rpc("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in answer, answer
        return answer["result"]

    def ok(self, name: str, arguments: dict | None = None):
        result = self.call(name, arguments)
        assert result["isError"] is False, result
        return result.get("structuredContent", result["content"][0]["text"])

    def refused(self, name: str, arguments: dict | None = None) -> str:
        result = self.call(name, arguments)
        assert result["isError"] is True, result
        assert "structuredContent" not in result
        return result["content"][0]["text"]


@pytest.fixture
def mcp(owner_mind) -> Mcp:
    return Mcp(owner_mind.key)


@pytest.fixture
def stranger(stranger_mind) -> Mcp:
    return Mcp(stranger_mind.key)


store = partial(remember, actor=SYSTEM)


def test_tools_list_describes_every_tool_strictly(mcp):
    tools = {tool["name"]: tool for tool in mcp.rpc("tools/list")["result"]["tools"]}
    assert set(tools) == TOOLS
    writes = {"remember", "forget", "check_messages", "reply"}
    for tool in tools.values():
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert len(tool["description"]) > 80
        assert tool["annotations"]["readOnlyHint"] is (tool["name"] not in writes)
    assert "start of every session" in tools["recall"]["description"]
    remember = tools["remember"]["inputSchema"]
    assert remember["required"] == ["category", "content"]
    assert "identity" in remember["properties"]["category"]["enum"]
    assert remember["properties"]["priority"]["enum"] == ["low", "normal", "high", "critical"]
    assert not any("verif" in name for name in tools)  # verifying is for people only


def test_remember_creates_then_updates_in_place(mcp, mind):
    created = mcp.ok(
        "remember",
        {
            "category": "preference",
            "key": "preference_editor",
            "content": "Uses Neovim",
            "tags": ["Tools", "tools"],
            "priority": "high",
            "confidence": 0.9,
            "expires_at": 4102444800,
        },
    )
    assert created["action"] == "created"
    assert created["source"] == "agent"
    assert created["verified"] is False
    assert created["tags"] == ["tools"]
    assert created["expires_at"] == "2100-01-01T00:00:00Z"
    assert created["mind_id"] == mind.id

    updated = mcp.ok(
        "remember", {"category": "preference", "key": "preference_editor", "content": "Helix"}
    )
    assert updated["action"] == "updated"
    assert updated["id"] == created["id"]
    assert updated["tags"] == ["tools"]  # omitted fields keep their value
    assert Memory.objects.filter(mind=mind).count() == 1


def test_remember_text_is_the_json_of_the_structured_content(mcp):
    result = mcp.call("remember", {"category": "fact", "content": "Lives in Berlin"})
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["structuredContent"]["key"].startswith("fact_lives_in_berlin_")


def test_agent_edit_clears_verification(mcp, mind):
    memory = store(mind, key="fact_city", content="Berlin")
    Memory.objects.filter(pk=memory.pk).update(verified=True, verified_by="owner@example.com")
    edited = mcp.ok("remember", {"category": "fact", "key": "fact_city", "content": "Hamburg"})
    assert edited["verified"] is False


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"category": "bogus", "content": "x"}, "category: Must be one of: identity"),
        ({"content": "x"}, "category: This field is required."),
        ({"category": "fact", "content": "x", "colour": "red"}, "colour"),
        ({"category": "fact", "content": "x", "confidence": 2}, "confidence"),
        ({"category": "fact", "content": "x", "confidence": 10**400}, "confidence: Must be"),
        ({"category": "fact", "content": "x", "priority": "urgent"}, "priority"),
        ({"category": "fact", "content": "x", "key": "has space"}, "key"),
        ({"category": "fact", "content": "x", "tags": "docker"}, "tags"),
        ({"category": "fact", "content": "   "}, "content: May not be empty"),
        ({"category": "fact", "content": "x", "expires_at": "next week"}, "expires_at: Must be"),
    ],
)
def test_remember_bad_arguments_are_tool_errors(mcp, mind, arguments, fragment):
    assert fragment in mcp.refused("remember", arguments)
    assert not Memory.objects.filter(mind=mind).exists()


def test_recall_text_budget_and_filters(mcp, mind):
    store(mind, key="identity_name", category="identity", content="Olive", priority="critical")
    store(mind, key="fact_city", content="Berlin", tags=["home"])
    for n in range(30):
        store(mind, key=f"note_{n}", category="note", content="filler " * 20, priority="low")

    text = mcp.ok("recall")
    assert text.startswith("Mind: Olive's Mind\nMemories: 32 total")
    assert text.index("identity_name") < text.index("fact_city")

    short = mcp.ok("recall", {"budget": 100})
    assert len(short) <= 400
    assert "identity_name" in short
    assert "low-priority memories left out" in short

    assert "fact_city" not in mcp.ok("recall", {"category": "identity"})
    tagged = mcp.ok("recall", {"tag": "HOME"})
    assert "fact_city" in tagged
    assert "identity_name" not in tagged

    assert "budget" in mcp.refused("recall", {"budget": 0})
    assert "1000000" in mcp.refused("recall", {"budget": 1_000_001})  # MAX_BUDGET


def test_search_ranks_and_refuses_empty_queries(mcp, mind):
    store(mind, key="fact_deploy", content="We deployed the app with Docker on Friday")
    store(mind, key="fact_cat", content="The cat is called Miso")
    found = mcp.ok("search", {"q": "deploying docker", "limit": 5})
    assert found["total"] == 1
    assert found["results"][0]["key"] == "fact_deploy"
    assert "«" in found["results"][0]["snippet"]
    assert mcp.ok("search", {"q": "docker", "category": "note"})["total"] == 0
    assert "q:" in mcp.refused("search", {"q": "-docker"})
    assert "limit" in mcp.refused("search", {"q": "docker", "limit": 1000})


def test_search_by_meaning_and_its_mode(mcp, mind):
    from django.test import override_settings

    from tests.factories import embed

    embed(store(mind, key="fact_dog", content="Has a border collie named Pixel."))
    embed(store(mind, key="fact_deploy", content="We deployed the app with Docker on Friday"))
    question = "does he have any animals"
    found = mcp.ok("search", {"q": question})  # hybrid: embeddings are on
    assert (found["results"][0]["key"], found["results"][0]["match"]) == ("fact_dog", "meaning")
    assert mcp.ok("search", {"q": question, "mode": "semantic"})["results"][0]["key"] == "fact_dog"
    assert mcp.ok("search", {"q": question, "mode": "keyword"})["total"] == 0
    excluded = mcp.ok("search", {"q": f"{question} -pixel", "mode": "semantic"})["results"]
    assert "fact_dog" not in [r["key"] for r in excluded]
    assert "mode" in mcp.refused("search", {"q": "docker", "mode": "fuzzy"})
    with override_settings(SYNAPSE_EMBEDDINGS="off"):
        assert "SYNAPSE_EMBEDDINGS" in mcp.refused("search", {"q": question, "mode": "semantic"})
        assert mcp.ok("search", {"q": "docker"})["results"][0]["match"] == "keyword"
    [tool] = [t for t in mcp.rpc("tools/list")["result"]["tools"] if t["name"] == "search"]
    assert tool["inputSchema"]["properties"]["mode"]["enum"] == ["hybrid", "keyword", "semantic"]


def test_forget_by_id_or_by_category_and_key(mcp, mind):
    one = store(mind, key="fact_one", content="one")
    store(mind, key="fact_two", content="two")
    assert mcp.ok("forget", {"id": one.id}) == {
        "deleted": True,
        "id": one.id,
        "category": "fact",
        "key": "fact_one",
    }
    assert mcp.ok("forget", {"category": "fact", "key": "fact_two"})["deleted"] is True
    assert not Memory.objects.filter(mind=mind).exists()
    assert "No memory" in mcp.refused("forget", {"id": one.id})
    assert "No memory" in mcp.refused("forget", {"category": "fact", "key": "fact_two"})
    assert "either id" in mcp.refused("forget", {"id": one.id, "category": "fact", "key": "k"})
    assert "Say which memory" in mcp.refused("forget", {"category": "fact"})


def test_list_memories_filters_and_pages(mcp, mind):
    store(mind, key="fact_a", content="a", priority="high", tags=["x"])
    store(mind, key="fact_b", content="b")
    store(mind, key="note_c", category="note", content="c", tags=["x"])
    everything = mcp.ok("list_memories")
    assert everything["total"] == 3
    assert everything["limit"] == 50
    assert mcp.ok("list_memories", {"category": "note"})["memories"][0]["key"] == "note_c"
    assert mcp.ok("list_memories", {"priority": "high"})["total"] == 1
    assert mcp.ok("list_memories", {"tag": "X"})["total"] == 2
    Memory.objects.filter(key="fact_b").update(verified=True)
    assert mcp.ok("list_memories", {"verified": True})["memories"][0]["key"] == "fact_b"
    assert mcp.ok("list_memories", {"verified": False})["total"] == 2
    page = mcp.ok("list_memories", {"limit": 1, "offset": 1})
    assert (page["total"], len(page["memories"]), page["offset"]) == (3, 1, 1)
    assert "limit" in mcp.refused("list_memories", {"limit": 0})


def test_memories_by_tag(mcp, mind):
    store(mind, key="fact_a", content="a", tags=["docker"])
    store(mind, key="fact_b", content="b")
    tagged = mcp.ok("memories_by_tag", {"tag": "Docker"})
    assert [m["key"] for m in tagged["memories"]] == ["fact_a"]
    assert "tag" in mcp.refused("memories_by_tag", {})


def test_expiring_soonest_first(mcp, mind):
    now = timezone.now()
    store(mind, key="fact_later", content="later", expires_at=now + timedelta(days=3))
    store(mind, key="fact_soon", content="soon", expires_at=now + timedelta(hours=2))
    store(mind, key="fact_gone", content="gone", expires_at=now - timedelta(hours=1))
    store(mind, key="fact_forever", content="forever")
    assert [m["key"] for m in mcp.ok("expiring")["memories"]] == ["fact_soon", "fact_later"]
    assert [m["key"] for m in mcp.ok("expiring", {"within": "24h"})["memories"]] == ["fact_soon"]
    assert mcp.ok("expiring", {"within": 60})["total"] == 0
    assert mcp.ok("expiring", {"within": "2w"})["total"] == 2
    assert "within" in mcp.refused("expiring", {"within": "soon"})
    assert "within" in mcp.refused("expiring", {"within": 0})


def test_stranger_cannot_see_or_forget_the_owners_memories(mcp, stranger, mind):
    secret = store(mind, key="fact_secret", content="The vault code is 1234", tags=["vault"])
    assert "fact_secret" not in stranger.ok("recall")
    assert stranger.ok("list_memories")["total"] == 0
    assert stranger.ok("memories_by_tag", {"tag": "vault"})["total"] == 0
    assert stranger.ok("search", {"q": "vault code"})["total"] == 0
    assert "No memory" in stranger.refused("forget", {"id": secret.id})
    assert "No memory" in stranger.refused("forget", {"category": "fact", "key": "fact_secret"})
    # Storing the same key in its own mind creates its own memory, never touches the owner's.
    own = stranger.ok("remember", {"category": "fact", "key": "fact_secret", "content": "mine"})
    assert own["action"] == "created"
    assert own["id"] != secret.id
    assert Memory.objects.get(pk=secret.id).content == "The vault code is 1234"
    answer = stranger.rpc("resources/read", {"uri": f"synapse://memory/{secret.id}"})
    assert answer["error"]["code"] == -32002


def test_unknown_tool_and_malformed_call_are_protocol_errors(mcp):
    assert mcp.rpc("tools/call", {"name": "verify"})["error"]["code"] == -32602
    assert mcp.rpc("tools/call", {})["error"]["code"] == -32602
    bad = mcp.rpc("tools/call", {"name": "recall", "arguments": [1]})
    assert bad["error"]["code"] == -32602


def test_recall_resource(mcp, mind):
    store(mind, key="fact_city", content="Berlin")
    resources = mcp.rpc("resources/list")["result"]["resources"]
    assert resources[0]["uri"] == "synapse://recall"
    assert resources[0]["mimeType"] == "text/plain"
    contents = mcp.rpc("resources/read", {"uri": "synapse://recall"})["result"]["contents"]
    assert contents[0]["mimeType"] == "text/plain"
    assert contents[0]["text"] == mcp.ok("recall")
    budgeted = mcp.rpc("resources/read", {"uri": "synapse://recall?budget=50&category=fact"})
    assert "fact_city" in budgeted["result"]["contents"][0]["text"]
    bad = mcp.rpc("resources/read", {"uri": "synapse://recall?budget=none"})
    assert bad["error"]["code"] == -32602
    assert mcp.rpc("resources/read", {"uri": "synapse://nothing"})["error"]["code"] == -32002
    assert mcp.rpc("resources/read", {"uri": "https://x"})["error"]["code"] == -32002


def test_recall_without_a_budget_is_cut_to_the_default_and_says_so(mcp, mind):
    # About 1.5 times what the default budget shows: normal, then low priority.
    count = DEFAULT_BUDGET * CHARS_PER_TOKEN * 3 // 2 // 1000
    many_memories(mind, count, content=lambda i: f"{i:04d} " + "x" * 995, priority=Priority.NORMAL)
    many_memories(mind, 3, key=lambda i: f"note_low_{i}", priority=Priority.LOW)
    limit = DEFAULT_BUDGET * CHARS_PER_TOKEN
    text = mcp.ok("recall")
    read = mcp.rpc("resources/read", {"uri": "synapse://recall"})["result"]["contents"][0]
    assert read["text"] == text
    assert len(text) <= limit
    assert f"Memories: {count + 3} total" in text
    assert "normal-priority memories left out" in text
    assert "… 3 low-priority memories left out: note_low_2, note_low_1, note_low_0" in text
    assert text.rstrip().endswith("(use search or raise the budget)")
    # The same cut as a budgeted REST recall; the largest budget shows everything.
    rest = Client(HTTP_AUTHORIZATION=f"Bearer {mcp.key}").get(
        f"/memory/recall?budget={DEFAULT_BUDGET}"
    )
    assert rest.content.decode() == text
    whole = mcp.ok("recall", {"budget": MAX_BUDGET})
    assert "left out" not in whole and "note_low_0" in whole


def test_recall_over_the_largest_budget_is_refused_by_the_tool_and_the_resource(mcp):
    assert f"maximum of {MAX_BUDGET}" in mcp.refused("recall", {"budget": MAX_BUDGET + 1})
    answer = mcp.rpc("resources/read", {"uri": f"synapse://recall?budget={MAX_BUDGET + 1}"})
    assert answer["error"]["code"] == -32602
    assert f"maximum of {MAX_BUDGET}" in answer["error"]["message"]


def test_the_recall_tool_describes_its_default_and_largest_budget(mcp):
    tools = {t["name"]: t for t in mcp.rpc("tools/list")["result"]["tools"]}
    budget = tools["recall"]["inputSchema"]["properties"]["budget"]
    assert (budget["default"], budget["maximum"]) == (DEFAULT_BUDGET, MAX_BUDGET)


@pytest.mark.parametrize("budget", ["%C2%B2", "²", "٣", "9" * 5000, "-5", "1e3"])
def test_recall_resource_with_an_odd_budget_is_a_parameter_error(mcp, budget):
    answer = mcp.rpc("resources/read", {"uri": f"synapse://recall?budget={budget}"})
    assert answer["error"]["code"] == -32602, answer
    assert "budget" in answer["error"]["message"]


def test_memory_resource_template(mcp, mind):
    memory = store(mind, key="fact_city", content="Berlin")
    templates = mcp.rpc("resources/templates/list")["result"]["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "synapse://memory/{id}"
    uri = f"synapse://memory/{memory.id}"
    content = mcp.rpc("resources/read", {"uri": uri})["result"]["contents"][0]
    assert json.loads(content["text"])["key"] == "fact_city"


def test_remember_supersedes_an_earlier_fact(mcp, stranger):
    old = mcp.ok("remember", {"category": "fact", "key": "fact_city", "content": "Lives in Berlin"})
    new = mcp.ok(
        "remember",
        {
            "category": "fact",
            "key": "fact_city_now",
            "content": "Moved to Munich",
            "supersedes": old["id"],
        },
    )
    assert Memory.objects.get(pk=old["id"]).superseded_by_id == new["id"]
    assert "Berlin" not in mcp.ok("recall")
    assert mcp.ok("search", {"q": "berlin"})["total"] == 0
    assert [m["id"] for m in mcp.ok("list_memories")["memories"]] == [new["id"]]
    # Another mind's id is unknown here: refused, nothing stored.
    refusal = stranger.refused(
        "remember", {"category": "fact", "content": "x", "supersedes": old["id"]}
    )
    assert "supersedes" in refusal
