"""POST /memory: create, upsert, validation, source rules."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from memories.models import Memory, MemoryTag
from minds.services import mind_create
from tests.conftest import bearer_client

BASE = {"category": "preference", "key": "preference_editor", "content": "Uses Neovim"}


def test_store_creates_201_then_upserts_200_same_id(agent):
    first = agent.post("/memory", BASE, format="json")
    second = agent.post("/memory", {**BASE, "content": "Uses Helix"}, format="json")
    assert first.status_code == 201, first.json()
    assert second.status_code == 200, second.json()
    one, two = first.json(), second.json()
    assert (one["action"], two["action"]) == ("created", "updated")
    assert one["id"] == two["id"] and one["id"].startswith("mem_")
    assert two["content"] == "Uses Helix"
    assert two["updated_at"] >= one["updated_at"]
    assert Memory.objects.count() == 1


def test_store_answer_is_the_memory_plus_action_and_warnings(agent, mind):
    body = agent.post("/memory", BASE, format="json").json()
    assert set(body) == {
        "id", "mind_id", "category", "key", "content", "tags", "priority", "source",
        "verified", "confidence", "expires_at", "created_at", "updated_at", "verified_at",
        "verified_by", "superseded_by", "action", "warnings",
    }  # fmt: skip
    assert body["mind_id"] == mind.id
    assert body["warnings"] == []
    assert body["source"] == "agent"
    assert body["verified"] is False
    assert body["confidence"] == 0.7
    assert body["priority"] == "normal"
    assert body["created_at"].endswith("Z")


def test_trailing_slash_works_too(agent):
    assert agent.post("/memory/", BASE, format="json").status_code == 201
    assert agent.get("/memory/").status_code == 200


def test_identical_store_answers_200_unchanged_like_sync(agent):
    agent.post("/memory", BASE, format="json")
    again = agent.post("/memory", BASE, format="json")
    assert again.status_code == 200
    assert again.json()["action"] == "unchanged"
    synced = agent.post("/memory/sync", {"memories": [BASE]}, format="json").json()
    assert synced["results"][0]["action"] == "unchanged"
    changed = agent.post("/memory", {**BASE, "content": "something new"}, format="json")
    assert changed.status_code == 200 and changed.json()["action"] == "updated"


def test_store_without_key_derives_a_stable_one(agent):
    body = {"category": "fact", "content": "The user lives in Berlin"}
    first = agent.post("/memory", body, format="json").json()
    second = agent.post("/memory", body, format="json")
    assert first["key"].startswith("fact_the_user_lives_in_berlin_")
    assert second.status_code == 200
    assert second.json()["id"] == first["id"]
    assert Memory.objects.count() == 1


def test_human_memories_are_user_and_verified(human, owner):
    body = human.post("/memory", BASE, format="json").json()
    assert body["source"] == "user"
    assert body["verified"] is True
    assert body["verified_by"] == owner.email
    assert body["verified_at"] is not None
    assert body["confidence"] == 1.0


@pytest.mark.parametrize("asked", ["user", "system"])
def test_agent_source_forging_is_stored_as_agent_with_warning(agent, asked):
    response = agent.post("/memory", {**BASE, "source": asked}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["source"] == "agent"
    assert body["verified"] is False
    assert any(asked in w for w in body["warnings"])


def test_agent_may_store_as_tool(agent):
    body = agent.post("/memory", {**BASE, "source": "tool"}, format="json").json()
    assert body["source"] == "tool"
    assert body["warnings"] == []


def test_server_owned_fields_are_ignored_with_a_warning(agent, mind):
    sent = {
        **BASE,
        "id": "mem_forged",
        "mind_id": mind.id,
        "verified": True,
        "verified_by": "boss@example.com",
        "created_at": "2000-01-01T00:00:00Z",
    }
    response = agent.post("/memory", sent, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["id"] != "mem_forged"
    assert body["verified"] is False
    assert body["verified_by"] is None
    assert not body["created_at"].startswith("2000")
    assert any("verified" in w and "id" in w for w in body["warnings"])


def test_mind_id_of_another_mind_in_body_is_refused(agent, stranger_mind):
    response = agent.post("/memory", {**BASE, "mind_id": stranger_mind.mind.id}, format="json")
    assert response.status_code == 400
    assert "mind_id" in response.json()["fields"]
    assert Memory.objects.count() == 0


def test_unknown_field_is_refused_by_name(agent):
    response = agent.post("/memory", {**BASE, "contnet": "typo"}, format="json")
    assert response.status_code == 400
    assert "contnet" in response.json()["fields"]


def test_tags_are_normalised(agent):
    body = agent.post(
        "/memory", {**BASE, "tags": [" Tools", "tools", "EDITOR "]}, format="json"
    ).json()
    assert body["tags"] == ["tools", "editor"]
    assert sorted(MemoryTag.objects.values_list("tag", flat=True)) == ["editor", "tools"]


def test_null_tags_clear_and_omitted_tags_keep(agent):
    agent.post("/memory", {**BASE, "tags": ["a"]}, format="json")
    kept = agent.post("/memory", {**BASE, "content": "v2"}, format="json").json()
    assert kept["tags"] == ["a"]
    cleared = agent.post("/memory", {**BASE, "tags": None}, format="json").json()
    assert cleared["tags"] == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1767225600, "2026-01-01T00:00:00Z"),
        ("1767225600", "2026-01-01T00:00:00Z"),
        ("2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z"),
        (None, None),
    ],
)
def test_expires_at_accepts_iso_or_epoch_and_answers_iso_utc(agent, value, expected):
    body = agent.post("/memory", {**BASE, "expires_at": value}, format="json").json()
    assert body["expires_at"] == expected


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("category", "thoughts"),
        ("category", 3),
        ("category", None),
        ("priority", "urgent"),
        ("priority", 2),
        ("source", "robot"),
        ("content", 42),
        ("content", ""),
        ("content", "   "),
        ("content", ["a"]),
        ("content", {"text": "nested"}),
        ("content", "x" * 50_001),
        ("key", 7),
        ("key", "two words"),
        ("key", "x" * 201),
        ("key", ""),
        ("tags", "docker"),
        ("tags", [1, 2]),
        ("tags", [["nested"]]),
        ("tags", {"a": 1}),
        ("tags", [f"t{i}" for i in range(21)]),
        ("tags", ["x" * 65]),
        ("tags", [""]),
        ("confidence", "high"),
        ("confidence", 1.5),
        ("confidence", -0.1),
        ("confidence", True),
        pytest.param("confidence", 10**400, id="confidence-10**400"),
        pytest.param("confidence", -(10**400), id="confidence--10**400"),
        ("expires_at", "next week"),
        ("expires_at", True),
        ("expires_at", {"at": 1}),
        ("expires_at", 1e300),
    ],
)
def test_bad_input_is_400_naming_the_field(agent, field, value):
    response = agent.post("/memory", {**BASE, field: value}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid"
    assert field in body["fields"], body
    assert Memory.objects.count() == 0


def test_unknown_category_names_the_allowed_values(agent):
    body = agent.post("/memory", {**BASE, "category": "thoughts"}, format="json").json()
    message = body["fields"]["category"][0]
    for allowed in ("identity", "preference", "fact", "project", "skill", "mistake", "note"):
        assert allowed in message


def test_unknown_priority_names_the_allowed_values(agent):
    body = agent.post("/memory", {**BASE, "priority": "urgent"}, format="json").json()
    assert "low, normal, high, critical" in body["fields"]["priority"][0]


def test_missing_required_fields(agent):
    body = agent.post("/memory", {}, format="json").json()
    assert set(body["fields"]) == {"category", "content"}


@pytest.mark.parametrize("payload", ["[1, 2]", '"text"', "42", "null"])
def test_non_object_body_is_400(agent, payload):
    response = agent.post("/memory", payload, content_type="application/json")
    assert response.status_code == 400


def test_malformed_json_is_400(agent):
    response = agent.post("/memory", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "malformed_body"


def test_lone_surrogate_is_400_not_500(agent):
    raw = '{"category": "fact", "key": "k", "content": "bad \\ud800 text"}'
    response = agent.post("/memory", raw, content_type="application/json")
    assert response.status_code == 400


def test_unicode_content_round_trips(agent):
    content = "Michael Schäfer — 日本語 🧠\n  indented line"
    body = agent.post("/memory", {**BASE, "content": content}, format="json").json()
    assert body["content"] == content


def test_anonymous_is_401(anon):
    assert anon.post("/memory", BASE, format="json").status_code == 401


def test_same_key_in_two_minds_is_two_memories(agent, stranger_agent):
    a = agent.post("/memory", BASE, format="json").json()
    b = stranger_agent.post("/memory", BASE, format="json").json()
    assert a["id"] != b["id"]
    assert stranger_agent.post("/memory", BASE, format="json").json()["id"] == b["id"]
    assert Memory.objects.count() == 2


def test_human_with_several_minds_names_one(human, owner):
    second, _ = mind_create(owner=owner, name="Second")
    assert human.post("/memory", BASE, format="json").status_code == 400
    response = human.post(f"/memory?mind={second.id}", BASE, format="json")
    assert response.status_code == 201
    assert response.json()["mind_id"] == second.id
    response = human.post("/memory", BASE, format="json", HTTP_X_MIND_ID=second.id)
    assert response.status_code == 200


def test_human_cannot_store_into_a_mind_they_do_not_own(human, stranger_mind):
    response = human.post(f"/memory?mind={stranger_mind.mind.id}", BASE, format="json")
    assert response.status_code == 404
    assert Memory.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_racing_stores_on_one_key_make_one_row(owner_mind):
    statuses: list[int] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(8)

    def post(i: int) -> None:
        try:
            client = bearer_client(owner_mind.key)
            barrier.wait()
            response = client.post("/memory", {**BASE, "content": f"v{i}"}, format="json")
            statuses.append(response.status_code)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(statuses) == [200] * 7 + [201]
    assert Memory.objects.filter(key=BASE["key"]).count() == 1
