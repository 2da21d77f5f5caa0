"""POST /memory/{id}/verify and /unverify: a person only, own minds only."""

from __future__ import annotations

import pytest

from memories.models import Memory, MemoryEvent
from minds.services import mind_create


@pytest.fixture
def stored(agent):
    return agent.post(
        "/memory", {"category": "fact", "key": "fact_pet", "content": "Has a cat"}, format="json"
    ).json()


def test_human_verifies_an_agent_memory(human, owner, stored):
    response = human.post(f"/memory/{stored['id']}/verify")
    assert response.status_code == 200
    body = response.json()
    assert body["verified"] is True
    assert body["verified_by"] == owner.email
    assert body["verified_at"] is not None
    assert body["source"] == "agent"


def test_agent_cannot_verify(agent, stored):
    for path in ("verify", "unverify"):
        response = agent.post(f"/memory/{stored['id']}/{path}")
        assert response.status_code == 403
        assert response.json()["error"] == "forbidden"
    assert Memory.objects.get(pk=stored["id"]).verified is False


def test_stranger_agent_gets_403_before_any_lookup(stranger_agent, stored):
    assert stranger_agent.post(f"/memory/{stored['id']}/verify").status_code == 403


def test_unverify_clears_verified_by_and_at(human, stored):
    human.post(f"/memory/{stored['id']}/verify")
    body = human.post(f"/memory/{stored['id']}/unverify").json()
    assert body["verified"] is False
    assert body["verified_by"] is None
    assert body["verified_at"] is None


def test_agent_content_edit_clears_verification(agent, human, stored):
    human.post(f"/memory/{stored['id']}/verify")
    body = agent.put(f"/memory/{stored['id']}", {"content": "Has two cats"}, format="json").json()
    assert body["verified"] is False
    assert body["verified_by"] is None
    upsert = agent.post(
        "/memory", {"category": "fact", "key": "fact_pet", "content": "Has a dog"}, format="json"
    ).json()
    assert upsert["verified"] is False


def test_agent_non_content_edit_keeps_verification(agent, human, stored):
    human.post(f"/memory/{stored['id']}/verify")
    body = agent.patch(f"/memory/{stored['id']}", {"tags": ["pets"]}, format="json").json()
    assert body["verified"] is True


def test_human_content_edit_keeps_it_verified(human, stored, owner):
    body = human.put(f"/memory/{stored['id']}", {"content": "Has a dog"}, format="json").json()
    assert body["verified"] is True
    assert body["verified_by"] == owner.email


def test_verify_is_idempotent(human, stored):
    first = human.post(f"/memory/{stored['id']}/verify").json()
    second = human.post(f"/memory/{stored['id']}/verify").json()
    assert first == second
    assert MemoryEvent.objects.filter(action="verify").count() == 1


def test_other_human_gets_404_and_changes_nothing(other_human, other_user, stored):
    mind_create(owner=other_user, name="Theirs")
    for path in ("verify", "unverify"):
        assert other_human.post(f"/memory/{stored['id']}/{path}").status_code == 404
    assert Memory.objects.get(pk=stored["id"]).verified is False


def test_verify_unknown_id_is_404(human):
    assert human.post("/memory/mem_nothing/verify").status_code == 404


def test_verify_needs_post(human, stored):
    assert human.get(f"/memory/{stored['id']}/verify").status_code == 405
