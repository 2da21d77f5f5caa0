"""GET /memory, GET/PUT/PATCH/DELETE /memory/{id}: filters, partial updates, isolation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories.models import Memory, MemoryEvent, MemoryTag
from minds.services import mind_create
from tests.factories import remember


@pytest.fixture
def stored(agent):
    return agent.post(
        "/memory",
        {"category": "fact", "key": "fact_city", "content": "Lives in Berlin", "tags": ["home"]},
        format="json",
    ).json()


# --- list ------------------------------------------------------------------------------------


def test_list_answers_memories_total_limit_offset(agent, mind):
    for i in range(5):
        remember(mind, f"k{i}")
    body = agent.get("/memory?limit=2&offset=1").json()
    assert set(body) == {"memories", "total", "limit", "offset"}
    assert (body["total"], body["limit"], body["offset"]) == (5, 2, 1)
    assert len(body["memories"]) == 2


def test_list_defaults_and_bounds(agent, mind):
    remember(mind, "k")
    body = agent.get("/memory").json()
    assert (body["limit"], body["offset"]) == (100, 0)
    assert agent.get("/memory?limit=1000").status_code == 200
    for bad in ("limit=1001", "limit=0", "limit=x", "offset=-1"):
        response = agent.get(f"/memory?{bad}")
        assert response.status_code == 400, bad
        assert bad.split("=")[0] in response.json()["fields"]


def test_list_is_newest_change_first(agent, mind):
    remember(mind, "old")
    remember(mind, "new")
    keys = [m["key"] for m in agent.get("/memory").json()["memories"]]
    assert keys == ["new", "old"]


def test_list_filters(agent, human, mind):
    remember(mind, "a", category="skill", tags=["Docker"], priority="high")
    remember(mind, "b", category="fact", tags=["docker", "ci"], source="tool")
    remember(mind, "c", category="fact")
    human.post("/memory", {"category": "note", "key": "d", "content": "by hand"}, format="json")

    def keys(query: str) -> list[str]:
        response = agent.get(f"/memory?{query}")
        assert response.status_code == 200, response.json()
        return sorted(m["key"] for m in response.json()["memories"])

    assert keys("category=fact") == ["b", "c"]
    assert keys("tag=DOCKER") == ["a", "b"]
    assert keys("tag=ci&category=fact") == ["b"]
    assert keys("priority=high") == ["a"]
    assert keys("source=tool") == ["b"]
    assert keys("source=user") == ["d"]
    assert keys("verified=true") == ["d"]
    assert keys("verified=false") == ["a", "b", "c"]


@pytest.mark.parametrize("query", ["category=x", "priority=urgent", "source=bot", "verified=maybe"])
def test_bad_filters_are_400(agent, query):
    response = agent.get(f"/memory?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()["fields"]


def test_expired_memories_are_left_out_unless_asked(agent, mind):
    past = timezone.now() - timedelta(hours=1)
    remember(mind, "gone", expires_at=past)
    remember(mind, "later", expires_at=timezone.now() + timedelta(days=1))
    remember(mind, "never")
    listed = agent.get("/memory").json()
    assert sorted(m["key"] for m in listed["memories"]) == ["later", "never"]
    assert listed["total"] == 2
    everything = agent.get("/memory?include_expired=true").json()
    assert everything["total"] == 3


def test_list_query_count_does_not_grow_with_rows(agent, mind):
    for i in range(30):
        remember(mind, f"k{i}", tags=["a", "b"])
    with CaptureQueriesContext(connection) as ctx:
        response = agent.get("/memory?tag=a")
    assert response.json()["total"] == 30
    assert len(ctx.captured_queries) <= 4  # mind key lookup, count, page (+ nothing per row)


def test_list_never_shows_another_minds_memories(agent, stranger_agent, stored, other_human):
    assert stranger_agent.get("/memory").json()["total"] == 0
    assert agent.get("/memory").json()["total"] == 1
    # a user without minds has nothing to list
    assert other_human.get("/memory").status_code == 400


# --- get ---------------------------------------------------------------------------------------


def test_get_one(agent, stored):
    response = agent.get(f"/memory/{stored['id']}")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == stored["id"]
    assert "action" not in body


def test_unknown_id_is_404(agent):
    response = agent.get("/memory/mem_doesnotexist")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_named_subpaths_never_hit_the_detail_route(agent):
    # Fixed sub-paths like /memory/recall belong to their own views, never to /memory/{id}.
    response = agent.get("/memory/unknown-thing")
    assert response.status_code == 404


# --- update ------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch"])
def test_update_accepts_a_partial_body(agent, stored, method):
    response = getattr(agent, method)(
        f"/memory/{stored['id']}", {"priority": "critical"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["priority"] == "critical"
    assert body["content"] == stored["content"]
    assert body["tags"] == stored["tags"]
    assert body["updated_at"] > stored["updated_at"]


def test_update_content_tags_expiry(agent, stored):
    body = agent.put(
        f"/memory/{stored['id']}",
        {"content": "Lives in Hamburg", "tags": ["Home", "north"], "expires_at": 1767225600},
        format="json",
    ).json()
    assert body["content"] == "Lives in Hamburg"
    assert body["tags"] == ["home", "north"]
    assert body["expires_at"] == "2026-01-01T00:00:00Z"
    assert sorted(MemoryTag.objects.values_list("tag", flat=True)) == ["home", "north"]
    cleared = agent.patch(f"/memory/{stored['id']}", {"expires_at": None}, format="json").json()
    assert cleared["expires_at"] is None


def test_update_to_a_taken_key_is_409(agent, stored):
    other = agent.post(
        "/memory", {"category": "fact", "key": "fact_other", "content": "x"}, format="json"
    ).json()
    response = agent.put(f"/memory/{other['id']}", {"key": "fact_city"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"] == "conflict"
    assert Memory.objects.get(pk=other["id"]).key == "fact_other"


def test_update_may_move_category(agent, stored):
    body = agent.patch(f"/memory/{stored['id']}", {"category": "note"}, format="json").json()
    assert body["category"] == "note"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("content", None),
        ("content", 5),
        ("key", None),
        ("key", "has space"),
        ("category", "x"),
        ("tags", "a,b"),
        ("priority", None),
        ("confidence", "1"),
        ("bogus", 1),
    ],
)
def test_bad_update_is_400(agent, stored, field, value):
    response = agent.put(f"/memory/{stored['id']}", {field: value}, format="json")
    assert response.status_code == 400
    assert field in response.json()["fields"]


@pytest.mark.parametrize("method", ["put", "patch"])
def test_a_confidence_too_big_for_a_float_is_400(agent, stored, method):
    response = getattr(agent, method)(
        f"/memory/{stored['id']}", {"confidence": 10**400}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "between 0.0 and 1.0" in response.json()["fields"]["confidence"][0]
    assert agent.get(f"/memory/{stored['id']}").json()["confidence"] == stored["confidence"]


def test_update_ignores_server_owned_fields(agent, stored):
    record = {**stored, "content": "Lives in Munich", "verified": True, "id": "mem_other"}
    record.pop("action")
    record.pop("warnings")
    response = agent.put(f"/memory/{stored['id']}", record, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == stored["id"]
    assert body["verified"] is False
    assert body["content"] == "Lives in Munich"


def test_source_forging_on_update_is_stored_as_agent(agent, stored):
    body = agent.put(
        f"/memory/{stored['id']}", {"content": "new", "source": "user"}, format="json"
    ).json()
    assert body["source"] == "agent"


def test_empty_update_changes_nothing(agent, stored):
    body = agent.put(f"/memory/{stored['id']}", {}, format="json").json()
    assert body["updated_at"] == stored["updated_at"]
    assert MemoryEvent.objects.filter(action="update").count() == 0


# --- delete ------------------------------------------------------------------------------------


def test_delete_answers_deleted_and_id(agent, stored):
    response = agent.delete(f"/memory/{stored['id']}")
    assert response.status_code == 200
    assert response.json() == {"deleted": True, "id": stored["id"]}
    assert not Memory.objects.exists()
    assert not MemoryTag.objects.exists()
    assert agent.get(f"/memory/{stored['id']}").status_code == 404
    assert agent.delete(f"/memory/{stored['id']}").status_code == 404


# --- isolation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("get", "", None),
        ("put", "", {"content": "hijacked"}),
        ("patch", "", {"content": "hijacked"}),
        ("delete", "", None),
    ],
)
def test_other_minds_get_404_and_change_nothing(
    stranger_agent, other_human, other_user, stored, method, suffix, body
):
    mind_create(owner=other_user, name="Other's only mind")
    before = Memory.objects.values().get(pk=stored["id"])
    for client in (stranger_agent, other_human):
        call = getattr(client, method)
        url = f"/memory/{stored['id']}{suffix}"
        response = call(url, body, format="json") if body else call(url)
        assert response.status_code == 404, response.json()
    assert Memory.objects.values().get(pk=stored["id"]) == before


def test_human_naming_a_stranger_mind_gets_404(human, stranger_mind, stranger_agent):
    theirs = stranger_agent.post(
        "/memory", {"category": "fact", "key": "secret", "content": "s"}, format="json"
    ).json()
    mind_q = f"?mind={stranger_mind.mind.id}"
    assert human.get(f"/memory/{theirs['id']}").status_code == 404
    assert human.get(f"/memory/{theirs['id']}{mind_q}").status_code == 404
    assert human.get(f"/memory{mind_q}").status_code == 404
    assert human.delete(f"/memory/{theirs['id']}").status_code == 404
    assert human.put(f"/memory/{theirs['id']}", {"content": "x"}, format="json").status_code == 404
    assert Memory.objects.get(pk=theirs["id"]).content == "s"


def test_stranger_agent_gets_404_exactly_like_missing(stranger_agent, stored):
    theirs = stranger_agent.get(f"/memory/{stored['id']}")
    missing = stranger_agent.get("/memory/mem_doesnotexist")
    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()


def test_human_sees_the_agents_memories_of_their_mind(human, stored):
    assert human.get(f"/memory/{stored['id']}").status_code == 200
    assert human.get("/memory").json()["total"] == 1


def test_updates_and_deletes_reach_the_search_index(agent):
    stored = agent.post(
        "/memory",
        {"category": "fact", "key": "k", "content": "likes bananas", "tags": ["fruit"]},
        format="json",
    ).json()
    agent.put(
        f"/memory/{stored['id']}", {"content": "likes cherries", "tags": ["red"]}, format="json"
    )
    assert agent.get("/memory/search?q=cherries").json()["total"] == 1
    assert agent.get("/memory/search?q=bananas").json()["total"] == 0
    assert agent.get("/memory/search?q=red").json()["total"] == 1
    agent.delete(f"/memory/{stored['id']}")
    assert agent.get("/memory/search?q=cherries").json()["total"] == 0
