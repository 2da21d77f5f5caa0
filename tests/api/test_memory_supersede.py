"""POST /memory/{id}/supersede, a store's `supersedes`, proposals, and what leaves the views."""

from __future__ import annotations

import pytest

from memories.models import Memory, MemoryEvent, SupersedeProposal
from tests.api.memory_helpers import assert_invalid, ids, json_of, text_of


def _store(client, key, content, **extra):
    body = {"category": "fact", "key": key, "content": content, **extra}
    response = client.post("/memory", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


@pytest.fixture
def office(agent):
    old = _store(agent, "fact_office", "The office is in Berlin", tags=["office"])
    new = _store(agent, "fact_office_new", "The office moved to Munich", tags=["office"])
    return old, new


def test_supersede_leaves_recall_search_and_lists_but_not_history(agent, office):
    old, new = office
    response = agent.post(f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["superseded_by"] == new["id"] and body["proposed"] is False
    assert response["ETag"]

    assert ids(agent.get("/memory").json()) == [new["id"]]
    assert "Berlin" not in text_of(agent.get("/memory/recall"))
    assert agent.get("/memory/search?q=berlin").json()["total"] == 0
    assert agent.get("/memory/by-tag?tag=office").json()["total"] == 1
    # Asked for, it is there; by id, always; the audit trail and export keep it.
    assert set(ids(agent.get("/memory?include_superseded=true").json())) == {old["id"], new["id"]}
    assert agent.get("/memory/search?q=berlin&include_superseded=true").json()["total"] == 1
    assert "Berlin" in text_of(agent.get("/memory/recall?include_superseded=true"))
    assert agent.get(f"/memory/{old['id']}").json()["superseded_by"] == new["id"]
    event = MemoryEvent.objects.filter(memory_id=old["id"], action="supersede").get()
    assert event.changes == {"superseded_by": {"old": None, "new": new["id"]}}
    exported = json_of(agent.get("/mind/export?format=json"))
    assert {m["id"] for m in exported["memories"]} >= {old["id"]}


def test_undo_with_null_brings_it_back(agent, office):
    old, new = office
    agent.post(f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json")
    body = agent.post(f"/memory/{old['id']}/supersede", {"by": None}, format="json").json()
    assert body["superseded_by"] is None
    assert set(ids(agent.get("/memory").json())) == {old["id"], new["id"]}


def test_store_body_supersedes(agent):
    old = _store(agent, "fact_editor", "Uses VS Code")
    new = _store(agent, "fact_editor_now", "Uses Neovim", supersedes=old["id"])
    assert new["warnings"] == []
    assert Memory.objects.get(pk=old["id"]).superseded_by_id == new["id"]


def test_store_naming_an_unknown_memory_is_refused_and_writes_nothing(agent):
    response = agent.post(
        "/memory",
        {"category": "fact", "content": "x", "supersedes": "mem_doesnotexist"},
        format="json",
    )
    assert_invalid(response, "supersedes")
    response = agent.post(
        "/memory", {"category": "fact", "content": "x", "supersedes": 12}, format="json"
    )
    assert_invalid(response, "supersedes")
    assert Memory.objects.count() == 0


def test_sync_refuses_only_the_item_with_an_unknown_target(agent):
    old = _store(agent, "fact_a", "A")
    body = {
        "memories": [
            {"category": "fact", "key": "fact_b", "content": "B", "supersedes": old["id"]},
            {"category": "fact", "key": "fact_c", "content": "C", "supersedes": "mem_nope"},
        ]
    }
    answer = agent.post("/memory/sync", body, format="json").json()
    assert answer["created"] == 1 and answer["errors"][0]["index"] == 1
    assert Memory.objects.get(pk=old["id"]).superseded_by is not None


def test_bad_bodies(agent, office):
    old, new = office
    path = f"/memory/{old['id']}/supersede"
    assert_invalid(agent.post(path, {}, format="json"), "by")
    assert_invalid(agent.post(path, {"by": "nope"}, format="json"), "by")
    assert_invalid(agent.post(path, {"by": old["id"]}, format="json"), "by")
    assert_invalid(agent.post(path, {"by": "mem_unknown1"}, format="json"), "by")
    agent.post(path, {"by": new["id"]}, format="json")
    loop = agent.post(f"/memory/{new['id']}/supersede", {"by": old["id"]}, format="json")
    assert_invalid(loop, "by")


def test_if_match_guards_the_supersede(agent, office):
    old, new = office
    tag = agent.get(f"/memory/{old['id']}")["ETag"]
    agent.put(f"/memory/{old['id']}", {"content": "The office is in Hamburg"}, format="json")
    response = agent.post(
        f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json", HTTP_IF_MATCH=tag
    )
    assert response.status_code == 412
    assert Memory.objects.get(pk=old["id"]).superseded_by is None


def test_agent_only_proposes_for_a_verified_memory(agent, human, office):
    old, new = office
    human.post(f"/memory/{old['id']}/verify")
    body = agent.post(f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json").json()
    assert body["proposed"] is True and body["superseded_by"] is None
    proposal_id = body["proposal"]["id"]
    assert agent.get("/memory").json()["total"] == 2  # the verified one stays current
    listed = human.get("/memory/proposals").json()
    assert listed["total"] == 1 and listed["proposals"][0]["by"]["id"] == new["id"]

    # The agent cannot reject; a person accepts by superseding the same way.
    assert agent.delete(f"/memory/{old['id']}/proposals/{proposal_id}").status_code == 403
    accepted = human.post(f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json")
    assert accepted.json()["superseded_by"] == new["id"]
    assert SupersedeProposal.objects.count() == 0


def test_store_supersedes_a_verified_memory_only_proposes(agent, human):
    old = _store(agent, "fact_city", "Lives in Berlin")
    human.post(f"/memory/{old['id']}/verify")
    new = _store(agent, "fact_city_now", "Lives in Munich", supersedes=old["id"])
    assert any("proposed" in w for w in new["warnings"])
    assert Memory.objects.get(pk=old["id"]).superseded_by is None
    assert SupersedeProposal.objects.filter(memory_id=old["id"], by_id=new["id"]).exists()


def test_person_rejects_a_proposal(agent, human, office):
    old, new = office
    human.post(f"/memory/{old['id']}/verify")
    proposal = agent.post(
        f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json"
    ).json()["proposal"]
    response = human.delete(f"/memory/{old['id']}/proposals/{proposal['id']}")
    assert response.status_code == 200 and response.json() == {
        "deleted": True,
        "id": proposal["id"],
    }
    assert human.delete(f"/memory/{old['id']}/proposals/{proposal['id']}").status_code == 404
    assert Memory.objects.get(pk=old["id"]).superseded_by is None


def test_deleting_the_successor_makes_the_original_current_again(agent, office):
    old, new = office
    agent.post(f"/memory/{old['id']}/supersede", {"by": new["id"]}, format="json")
    agent.delete(f"/memory/{new['id']}")
    assert ids(agent.get("/memory").json()) == [old["id"]]
    actions = list(MemoryEvent.objects.filter(memory_id=old["id"]).values_list("action", flat=True))
    assert actions.count("supersede") == 2


def test_other_minds_are_404_and_their_ids_unknown(agent, stranger_agent, office, stranger_mind):
    old, _new = office
    foreign = _store(stranger_agent, "fact_x", "Theirs")
    assert (
        stranger_agent.post(
            f"/memory/{old['id']}/supersede", {"by": foreign["id"]}, format="json"
        ).status_code
        == 404
    )
    # Naming another mind's memory as the successor: unknown here.
    assert_invalid(
        agent.post(f"/memory/{old['id']}/supersede", {"by": foreign["id"]}, format="json"), "by"
    )
    assert stranger_agent.get("/memory/proposals").json()["total"] == 0
