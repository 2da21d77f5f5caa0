"""Purge: DELETE /memory/{id}?purge=true and memories.services.memory_purge forget a memory:
its values leave the audit trail, with its vector, its search index rows and every copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Sum

from api.models import IdempotencyRecord
from core.errors import Conflict, Forbidden
from memories import audit, services
from memories.models import EmbeddingJob, Memory, MemoryEvent, MemoryTag, MemoryVector
from memories.search.sqlite import FTS_TABLE
from minds.models import Mind
from tests.api.memory_helpers import assert_invalid, text_of
from tests.factories import AGENT, PERSON, embed, remember, upsert

# Lower-case letters and digits: the keyword index keeps it as one word, unchanged.
UNIQUE = "zqxplorbium4471"


def _history_is_consistent(mind: Mind) -> None:
    held = MemoryEvent.objects.filter(mind=mind).aggregate(total=Sum("size"))["total"] or 0
    assert Mind.objects.get(pk=mind.pk).history_bytes == held


def _purged_memory(mind: Mind) -> Memory:
    """A memory holding UNIQUE in its content, tags and derived key, changed twice."""
    memory = upsert(mind, None, f"{UNIQUE} opens the cellar", tags=[f"{UNIQUE}tag"]).memory
    services.memory_update(memory=memory, actor=AGENT, content=f"the {UNIQUE} code changed")
    services.memory_update(memory=memory, actor=PERSON, tags=["cellar", UNIQUE])
    embed(Memory.objects.get(pk=memory.pk))
    return Memory.objects.get(pk=memory.pk)


# --- The service ---------------------------------------------------------------------------


def test_purge_forgets_values_and_keeps_who_did_what(mind):
    memory = _purged_memory(mind)
    other = remember(mind, "other", "keep me")
    services.memory_purge(memory=memory, actor=PERSON)

    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not MemoryVector.objects.filter(memory_id=memory.pk).exists()
    assert not MemoryTag.objects.filter(memory_id=memory.pk).exists()
    assert not EmbeddingJob.objects.filter(memory_id=memory.pk).exists()
    events = list(MemoryEvent.objects.filter(memory_id=memory.pk).order_by("at", "id"))
    assert [e.action for e in events] == ["create", "update", "update", "purge"]
    for event in events:
        assert event.size == 0 and event.key == memory.pk
        assert all(audit.is_purged(change) for change in event.changes.values())
        assert UNIQUE not in str(event.changes)
    purge = events[-1]
    assert (purge.actor, purge.actor_type) == (PERSON.name, "user")
    assert {"content", "tags", "key"} <= set(purge.changes)
    assert MemoryEvent.objects.filter(memory_id=other.pk, size__gt=0).exists()
    _history_is_consistent(mind)
    mind.refresh_from_db()
    assert (mind.stored_memories, mind.stored_bytes) == (1, len("keep me"))


def test_an_agent_may_not_purge(mind):
    memory = remember(mind, "k", "text")
    with pytest.raises(Forbidden):
        services.memory_purge(memory=memory, actor=AGENT)
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_purging_earlier_values_of_a_field_leaves_the_others_and_blocks_their_restore(mind):
    memory = upsert(mind, "k", f"secret {UNIQUE}", tags=["a"]).memory
    services.memory_update(memory=memory, actor=PERSON, content="nothing", tags=["b"])
    services.memory_values_purge(memory=memory, fields=["content"])
    first = MemoryEvent.objects.filter(memory_id=memory.pk).order_by("at", "id").first()
    assert audit.is_purged(first.changes["content"])
    assert first.changes["tags"] == {"old": None, "new": ["a"]}
    assert first.size == audit.changes_size(first.changes)
    _history_is_consistent(mind)
    memory.refresh_from_db()
    with pytest.raises(Conflict, match="purged"):
        services.memory_restore(memory=memory, actor=PERSON, event_id=first.pk)
    (shown, *_) = [e for e in audit.memory_history(memory=memory) if e.event.pk == first.pk]
    assert {name: str(old) for name, old, _ in shown.changes}["content"] == "(purged)"


def test_a_purge_is_a_delete_for_incremental_sync(human, mind):
    from datetime import timedelta

    from memories import selectors

    memory = remember(mind, "k", "text")
    since = memory.updated_at
    services.memory_purge(memory=memory, actor=PERSON)
    until = selectors.diff_until(mind=mind) + timedelta(seconds=1)
    diff = selectors.memory_diff(mind=mind, since=since, until=until)
    assert list(diff.deleted) == [memory.pk]


# --- The API -------------------------------------------------------------------------------


def test_api_purge_answers_and_forgets(human, mind):
    memory = _purged_memory(mind)
    response = human.delete(f"/memory/{memory.pk}?purge=true")
    assert response.status_code == 200, response.content
    assert response.json() == {"deleted": True, "id": memory.pk, "purged": True}
    assert not MemoryEvent.objects.filter(memory_id=memory.pk, size__gt=0).exists()
    audit_page = text_of(human.get(f"/memory/audit?memory_id={memory.pk}"))
    assert UNIQUE not in audit_page and "purge" in audit_page


def test_api_purge_false_is_a_plain_delete(human, mind):
    memory = remember(mind, "k", UNIQUE)
    assert human.delete(f"/memory/{memory.pk}?purge=false").json() == {
        "deleted": True,
        "id": memory.pk,
    }
    assert MemoryEvent.objects.get(memory_id=memory.pk, action="delete").changes["content"][
        "old"
    ] == (UNIQUE)


def test_api_bad_purge_value_is_a_400_naming_it(human, mind):
    memory = remember(mind, "k", "text")
    assert_invalid(human.delete(f"/memory/{memory.pk}?purge=maybe"), "purge")
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_api_mind_key_purge_is_403(agent, mind):
    memory = remember(mind, "k", "text")
    response = agent.delete(f"/memory/{memory.pk}?purge=true")
    assert response.status_code == 403
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_api_purge_of_another_minds_memory_is_404(stranger_agent, other_human, mind):
    memory = remember(mind, "k", "text")
    missing = other_human.delete(f"/memory/mem_doesnotexist00000000?purge=true&mind={mind.pk}")
    theirs = other_human.delete(f"/memory/{memory.pk}?purge=true&mind={mind.pk}")
    assert theirs.status_code == missing.status_code == 404
    assert stranger_agent.delete(f"/memory/{memory.pk}?purge=true").status_code == 404
    assert Memory.objects.filter(pk=memory.pk).exists()


def test_api_purge_drops_stored_answers_holding_it(human, mind):
    body = {"category": "fact", "key": "k", "content": UNIQUE}
    stored = human.post("/memory", body, format="json", HTTP_IDEMPOTENCY_KEY="one").json()
    # Another text: a near-repeat's answer would name the purged memory, and go with it.
    other = {**body, "key": "k2", "content": "Something else entirely"}
    human.post("/memory", other, format="json", HTTP_IDEMPOTENCY_KEY="two")
    assert IdempotencyRecord.objects.count() == 2
    human.delete(f"/memory/{stored['id']}?purge=true")
    (left,) = IdempotencyRecord.objects.all()
    assert left.key == "two"


# --- What is left on disk ------------------------------------------------------------------


@pytest.mark.sqlite_only
@pytest.mark.django_db(transaction=True)
def test_no_byte_of_a_purged_memory_is_left_in_the_sqlite_files(owner, owner_mind):
    mind = owner_mind.mind
    memory = _purged_memory(mind)
    for i in range(3):
        remember(mind, f"other{i}", f"unrelated text number {i}")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [UNIQUE])
        assert cursor.fetchone()[0] == 1
    services.memory_purge(memory=memory, actor=PERSON)
    main = Path(connection.settings_dict["NAME"])
    files = [main, main.with_name(main.name + "-wal")]
    for path in files:
        if path.exists():
            assert UNIQUE.encode() not in path.read_bytes(), path
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [UNIQUE])
        assert cursor.fetchone()[0] == 0


@pytest.mark.postgres_only
def test_no_table_holds_a_purged_memory_on_postgresql(mind):
    memory = _purged_memory(mind)
    services.memory_purge(memory=memory, actor=PERSON)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) "
            "FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE'"
        )
        tables = [name for (name,) in cursor.fetchall()]
        assert len(tables) > 10
        holding = []
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {table} t WHERE t::text LIKE %s", [f"%{UNIQUE}%"])
            if cursor.fetchone()[0]:
                holding.append(table)
    assert holding == []
