"""Every write through the API leaves a MemoryEvent with who, what and the old values."""

from __future__ import annotations

from memories.models import MemoryEvent


def test_api_writes_are_audited(agent, human, owner, owner_mind):
    stored = agent.post(
        "/memory",
        {"category": "fact", "key": "fact_lang", "content": "Speaks German", "tags": ["lang"]},
        format="json",
    ).json()
    memory_id = stored["id"]
    agent.put(f"/memory/{memory_id}", {"content": "Speaks German and English"}, format="json")
    human.post(f"/memory/{memory_id}/verify")
    human.post(f"/memory/{memory_id}/unverify")
    human.delete(f"/memory/{memory_id}")

    events = list(MemoryEvent.objects.filter(memory_id=memory_id).order_by("id"))
    assert [e.action for e in events] == ["create", "update", "verify", "unverify", "delete"]
    prefix = owner_mind.key[:11]
    assert [(e.actor, e.actor_type) for e in events] == [
        (prefix, "agent"),
        (prefix, "agent"),
        (owner.email, "user"),
        (owner.email, "user"),
        (owner.email, "user"),
    ]
    update = events[1]
    assert update.changes == {
        "content": {"old": "Speaks German", "new": "Speaks German and English"}
    }
    delete = events[-1]
    assert delete.changes["content"]["old"] == "Speaks German and English"
    assert delete.changes["tags"]["old"] == ["lang"]
    assert delete.changes["key"]["old"] == "fact_lang"
    assert delete.key == "fact_lang" and delete.category == "fact"
    assert all(e.mind_id == owner_mind.mind.id for e in events)


def test_noop_store_leaves_no_audit_row(agent):
    body = {"category": "fact", "key": "k", "content": "same"}
    agent.post("/memory", body, format="json")
    agent.post("/memory", body, format="json")
    assert MemoryEvent.objects.count() == 1


def test_refused_writes_leave_no_audit_row(agent, stranger_agent):
    agent.post("/memory", {"category": "nope", "content": "x"}, format="json")
    stored = agent.post("/memory", {"category": "fact", "content": "x"}, format="json").json()
    stranger_agent.delete(f"/memory/{stored['id']}")
    stranger_agent.put(f"/memory/{stored['id']}", {"content": "y"}, format="json")
    assert list(MemoryEvent.objects.values_list("action", flat=True)) == ["create"]
