"""Memory admin: lists, searches, moderates through the services; audit log is read-only."""

from __future__ import annotations

import pytest

from memories.actors import Actor
from memories.models import Memory, MemoryEvent
from memories.services import memory_upsert

pytestmark = pytest.mark.django_db

AGENT = Actor(kind="agent", name="mk_test")


@pytest.fixture
def memory(mind):
    return memory_upsert(
        mind=mind, actor=AGENT, category="fact", key="fact_tea", content="Drinks green tea"
    ).memory


def test_changelist_lists_and_searches(admin_client, memory, stranger_mind):
    memory_upsert(
        mind=stranger_mind.mind, actor=AGENT, category="fact", key="fact_coffee", content="Coffee"
    )
    response = admin_client.get("/admin/memories/memory/", {"q": "green tea"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "fact_tea" in html
    assert "fact_coffee" not in html


def test_change_page_renders_read_only(admin_client, memory):
    response = admin_client.get(f"/admin/memories/memory/{memory.pk}/change/")
    assert response.status_code == 200
    assert "Drinks green tea" in response.content.decode()


def test_verify_and_unverify_actions_use_the_services(admin_client, memory):
    admin_client.post(
        "/admin/memories/memory/",
        {"action": "verify_selected", "_selected_action": [memory.pk]},
    )
    memory.refresh_from_db()
    assert memory.verified is True
    assert memory.verified_by == "admin@example.com"
    admin_client.post(
        "/admin/memories/memory/",
        {"action": "unverify_selected", "_selected_action": [memory.pk]},
    )
    memory.refresh_from_db()
    assert (memory.verified, memory.verified_by, memory.verified_at) == (False, "", None)
    actions = list(MemoryEvent.objects.order_by("id").values_list("action", "actor"))
    assert actions[1:] == [("verify", "admin@example.com"), ("unverify", "admin@example.com")]


def test_delete_action_leaves_a_tombstone(admin_client, memory):
    admin_client.post(
        "/admin/memories/memory/",
        {"action": "delete_selected_memories", "_selected_action": [memory.pk]},
    )
    assert not Memory.objects.exists()
    tombstone = MemoryEvent.objects.get(action="delete")
    assert tombstone.changes["content"]["old"] == "Drinks green tea"
    assert tombstone.actor == "admin@example.com"


def test_audit_log_lists_and_is_read_only(admin_client, memory):
    response = admin_client.get("/admin/memories/memoryevent/")
    assert response.status_code == 200
    assert "fact_tea" in response.content.decode()
    event = MemoryEvent.objects.get()
    assert admin_client.get(f"/admin/memories/memoryevent/{event.pk}/change/").status_code == 200
    assert admin_client.get("/admin/memories/memoryevent/add/").status_code == 403
    assert admin_client.post(f"/admin/memories/memoryevent/{event.pk}/delete/").status_code == 403
