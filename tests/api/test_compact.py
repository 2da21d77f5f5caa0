"""POST /memory/compact and POST /memory/compact/{summary_id}/undo."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryEvent
from tests.api.memory_helpers import assert_invalid, ids, json_of, text_of
from tests.factories import remember

OLD = timezone.now() - timedelta(days=40)
EDITOR = [
    ("preference_editor", "Uses Neovim with LazyVim."),
    ("preference_editor_config", "Neovim config lives in ~/.config/nvim."),
    ("preference_editor_keys", "Uses vim keybindings in every editor."),
]


@pytest.fixture(autouse=True)
def _off(settings):
    # Tags and words cluster these; the tests of meaning are tests/memories/test_compact.py's.
    settings.SYNAPSE_EMBEDDINGS = "off"


@pytest.fixture
def editor(mind):
    return [
        remember(
            mind,
            key,
            content,
            category="preference",
            tags=["editor"],
            now=OLD + timedelta(seconds=i),
        )
        for i, (key, content) in enumerate(EDITOR)
    ]


def recall_entries(client) -> set[str]:
    """Recall's entries without their running numbers: the order within a priority follows
    `updated_at`, which an undo (a write) moves."""
    text = text_of(client.get("/memory/recall"))
    return {re.sub(r"^\[\d+\] ", "", entry.strip()) for entry in text.split("\n\n")}


def without_time(memory: dict) -> dict:
    return {name: value for name, value in memory.items() if name != "updated_at"}


def listed(client, **params) -> list[str]:
    response = client.get("/memory", params)
    assert response.status_code == 200, response.content
    return ids(response.json())


def test_a_dry_run_shows_the_plan_and_writes_nothing(agent, editor):
    events = MemoryEvent.objects.count()

    response = agent.post("/memory/compact", {"dry_run": True}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dry_run"] is True
    assert (body["clusters_processed"], body["memories_compacted"]) == (1, 3)
    (result,) = body["results"]
    assert result["originals"] == [m.pk for m in editor]
    summary = result["summary"]
    assert summary["id"] is None and summary["source"] == "system"
    assert summary["verified"] is False and summary["category"] == "preference"
    assert summary["content"].splitlines()[1:] == [f"- {content}" for _, content in EDITOR]
    assert MemoryEvent.objects.count() == events
    assert len(listed(agent)) == 3


def test_compacting_supersedes_the_originals_and_undo_brings_them_back(agent, editor, mind):
    before = recall_entries(agent)
    memories = {m["id"]: without_time(m) for m in agent.get("/memory").json()["memories"]}

    response = agent.post("/memory/compact", {}, format="json")

    assert response.status_code == 200, response.content
    (result,) = response.json()["results"]
    summary = result["summary"]
    assert summary["id"].startswith("mem_") and summary["source"] == "system"
    assert listed(agent) == [summary["id"]]
    assert "preference_editor_keys" not in text_of(agent.get("/memory/recall"))
    assert agent.get("/memory/search", {"q": "neovim"}).json()["total"] == 1
    assert set(Memory.objects.filter(superseded_by=summary["id"]).values_list("pk", flat=True)) == {
        m.pk for m in editor
    }

    undone = agent.post(f"/memory/compact/{summary['id']}/undo")

    assert undone.status_code == 200, undone.content
    assert undone.json() == {
        "summary_id": summary["id"],
        "restored": sorted(m.pk for m in editor),
        "summary_deleted": True,
    }
    after = {m["id"]: without_time(m) for m in agent.get("/memory").json()["memories"]}
    assert after == memories
    assert recall_entries(agent) == before


def test_a_person_may_compact_their_mind(human, editor):
    response = human.post("/memory/compact", {"min_cluster_size": 2}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["memories_compacted"] == 3


def test_nothing_old_enough_compacts_nothing(agent, mind):
    for key, content in EDITOR:
        remember(mind, key, content, category="preference", tags=["editor"])

    response = agent.post("/memory/compact", {}, format="json")

    assert response.json() == {
        "dry_run": False,
        "clusters_processed": 0,
        "memories_compacted": 0,
        "results": [],
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_clusters": 0}, "max_clusters"),
        ({"max_clusters": 51}, "max_clusters"),
        ({"min_cluster_size": 1}, "min_cluster_size"),
        ({"min_cluster_size": 21}, "min_cluster_size"),
        ({"older_than": -5}, "older_than"),
        ({"dry_run": "maybe"}, "dry_run"),
        ({"category": "gossip"}, "category"),
    ],
)
def test_bad_values_are_400_naming_the_field(agent, body, field):
    assert_invalid(agent.post("/memory/compact", body, format="json"), field)


def test_a_body_that_is_not_an_object_is_400(agent):
    response = agent.post("/memory/compact", [1, 2], format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid"


def test_another_minds_memories_are_never_compacted(stranger_agent, editor, other_human, mind):
    response = stranger_agent.post("/memory/compact", {"min_cluster_size": 2}, format="json")

    assert response.json()["clusters_processed"] == 0
    assert other_human.post(f"/memory/compact?mind={mind.pk}", {}, format="json").status_code == 404
    assert Memory.objects.filter(superseded_by__isnull=False).count() == 0


def test_undo_of_another_minds_summary_is_404_like_a_missing_one(agent, stranger_agent, editor):
    summary = json_of(agent.post("/memory/compact", {}, format="json"))["results"][0]["summary"]

    theirs = stranger_agent.post(f"/memory/compact/{summary['id']}/undo")
    missing = agent.post("/memory/compact/mem_nosuchmemory0000/undo")

    assert theirs.status_code == missing.status_code == 404
    assert theirs.json() == missing.json()
    assert Memory.objects.filter(superseded_by=summary["id"]).count() == 3


def test_undo_of_a_memory_that_is_not_a_summary_is_409(agent, editor):
    response = agent.post(f"/memory/compact/{editor[0].pk}/undo")

    assert response.status_code == 409
    assert response.json()["error"] == "conflict"


def test_compact_needs_credentials(anon):
    assert anon.post("/memory/compact", {}, format="json").status_code == 401
