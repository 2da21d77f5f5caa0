"""The FTS5 index follows every write (triggers) and the management command checks it.

SQLite internals; tests/memories/test_search_index_postgres.py is the PostgreSQL twin.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memories.actors import Actor
from memories.models import Memory
from memories.search import memory_search
from memories.search import sqlite as fts
from memories.search.query import parse_query
from memories.services import memory_delete, memory_update, memory_upsert
from tests.factories import memory_row

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite_only]


def found(mind, q: str) -> list[str]:
    return [hit.memory.key for hit in memory_search(mind=mind, q=q).hits]


def remember(mind, key, content, tags=(), category="note") -> Memory:
    return memory_row(mind, key, content, category=category, tags=list(tags))


def schema_sql(kind: str, names) -> dict[str, str]:
    marks = ", ".join(["%s"] * len(names))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT name, sql FROM sqlite_master WHERE type = %s AND name IN ({marks})",
            [kind, *names],
        )
        return {name: re.sub(r"\s+", "", sql) for name, sql in cursor.fetchall()}


def run_sql(*statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def assert_index_sound() -> None:
    assert fts.index_problems() == []


# --- the migration -------------------------------------------------------------------------


def test_migration_creates_table_and_triggers(db):
    assert set(schema_sql("trigger", fts.TRIGGER_NAMES)) == set(fts.TRIGGER_NAMES)
    assert schema_sql("table", [fts.FTS_TABLE])
    assert_index_sound()


def test_rebuild_recreates_exactly_what_the_migration_created(mind):
    remember(mind, "note_a", "alpha")
    names = [*fts.TRIGGER_NAMES, fts.FTS_TABLE]
    before = {**schema_sql("trigger", names), **schema_sql("table", names)}
    assert fts.rebuild_index() == 1
    after = {**schema_sql("trigger", names), **schema_sql("table", names)}
    assert before == after
    assert found(mind, "alpha") == ["note_a"]


@pytest.mark.django_db(transaction=True)
def test_migration_is_reversible(mind):
    remember(mind, "note_before", "zeppelin")
    call_command("migrate", "memories", "0001", verbosity=0)
    assert schema_sql("table", [fts.FTS_TABLE]) == {}
    assert schema_sql("trigger", fts.TRIGGER_NAMES) == {}
    call_command("migrate", verbosity=0)
    # Memories stored before the index existed are indexed by the migration.
    assert found(mind, "zeppelin") == ["note_before"]
    assert_index_sound()


# --- triggers: ORM writes ----------------------------------------------------------------------


def test_insert_is_indexed(mind):
    remember(mind, "preference_editor", "Neovim", tags=["tools"])
    assert found(mind, "neovim") == ["preference_editor"]
    assert found(mind, "editor") == ["preference_editor"]
    assert found(mind, "tools") == ["preference_editor"]
    assert_index_sound()


def test_content_update_reindexes(mind):
    memory = remember(mind, "preference_editor", "Neovim")
    memory.content = "Helix"
    memory.save()
    assert found(mind, "neovim") == []
    assert found(mind, "helix") == ["preference_editor"]
    assert_index_sound()


def test_key_update_reindexes(mind):
    memory = remember(mind, "preference_editor", "Neovim")
    memory.key = "preference_terminal_tool"
    memory.save()
    assert found(mind, "editor") == []
    assert found(mind, "terminal") == ["preference_terminal_tool"]
    assert_index_sound()


def test_tags_update_reindexes(mind):
    memory = remember(mind, "note_x", "something", tags=["alpha", "münchen"])
    assert found(mind, "munchen") == ["note_x"]
    memory.tags = ["beta"]
    memory.save()
    assert found(mind, "alpha") == []
    assert found(mind, "munchen") == []
    assert found(mind, "beta") == ["note_x"]
    assert_index_sound()


def test_update_of_unindexed_fields_keeps_the_index(mind):
    memory = remember(mind, "note_x", "quokka")
    Memory.objects.filter(pk=memory.pk).update(verified=True, priority=3)
    assert found(mind, "quokka") == ["note_x"]
    assert_index_sound()


def test_queryset_update_and_delete_are_followed(mind):
    remember(mind, "note_x", "quokka")
    Memory.objects.filter(mind=mind).update(content="wombat")
    assert found(mind, "wombat") == ["note_x"]
    Memory.objects.filter(mind=mind).delete()
    assert found(mind, "wombat") == []
    assert_index_sound()


def test_delete_is_unindexed(mind):
    memory = remember(mind, "note_x", "quokka")
    memory.delete()
    assert found(mind, "quokka") == []
    assert_index_sound()


def test_deleting_the_mind_unindexes_its_memories(mind):
    remember(mind, "note_x", "quokka")
    mind.delete()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {fts.FTS_TABLE}_docsize")
        assert cursor.fetchone()[0] == 0
    assert_index_sound()


# --- triggers: through the services ----------------------------------------------------------


def test_services_keep_the_index_in_sync(mind, owner):
    actor = Actor.for_user(owner)
    created = memory_upsert(
        mind=mind,
        actor=actor,
        category="preference",
        key="preference_editor",
        content="Uses Neovim",
        tags=["tools"],
    ).memory
    assert found(mind, "neovim") == ["preference_editor"]

    memory_upsert(
        mind=mind,
        actor=actor,
        category="preference",
        key="preference_editor",
        content="Uses Helix",
        tags=["modal"],
    )
    assert found(mind, "neovim") == [] and found(mind, "tools") == []
    assert found(mind, "helix modal") == ["preference_editor"]

    memory_update(memory=created, actor=actor, key="preference_text_editor", tags=["terminal"])
    assert found(mind, "text") == ["preference_text_editor"]
    assert found(mind, "modal") == []

    memory_delete(memory=created, actor=actor)
    assert found(mind, "helix") == []
    assert_index_sound()


# --- the management command ---------------------------------------------------------------


def test_check_passes_on_a_sound_index(mind, capsys):
    remember(mind, "note_x", "quokka", tags=["café"])
    call_command("search_index", "--check")
    assert "Search index OK" in capsys.readouterr().out


def test_check_fails_when_a_trigger_is_missing_and_rebuild_repairs(mind, capsys):
    run_sql("DROP TRIGGER memories_memory_fts_ai")
    remember(mind, "note_x", "quokka")  # written while the trigger is gone
    with pytest.raises(CommandError):
        call_command("search_index", "--check")
    err = capsys.readouterr().err
    assert "memories_memory_fts_ai" in err and "not indexed" in err
    assert found(mind, "quokka") == []

    call_command("search_index", "--rebuild", "--check")
    assert "Search index OK" in capsys.readouterr().out
    assert found(mind, "quokka") == ["note_x"]


def test_check_detects_renumbered_rowids(mind):
    # What a table remake (or a VACUUM that renumbers) does to an external-content index.
    a = remember(mind, "note_a", "quokka")
    b = remember(mind, "note_b", "wombat")
    run_sql(*(f"DROP TRIGGER {name}" for name in fts.TRIGGER_NAMES))
    with connection.cursor() as cursor:
        rowids = []
        for memory in (a, b):
            cursor.execute("SELECT rowid FROM memories_memory WHERE id = %s", [memory.pk])
            rowids.append(cursor.fetchone()[0])
        ra, rb = rowids
        cursor.execute("UPDATE memories_memory SET rowid = -1 WHERE id = %s", [a.pk])
        cursor.execute("UPDATE memories_memory SET rowid = %s WHERE id = %s", [ra, b.pk])
        cursor.execute("UPDATE memories_memory SET rowid = %s WHERE id = %s", [rb, a.pk])
    problems = fts.index_problems()
    assert any("differs" in p for p in problems)
    fts.rebuild_index()
    assert_index_sound()
    assert found(mind, "quokka") == ["note_a"]


def test_command_needs_an_action():
    with pytest.raises(CommandError, match="--rebuild"):
        call_command("search_index")


# --- the two snippet strategies ---------------------------------------------------------------


def test_both_snippet_strategies_give_the_same_page(mind, monkeypatch):
    for i in range(12):
        remember(mind, f"note_deploy_{i}", f"deployed {'server ' * i}on day {i}", tags=["ops"])
    remember(mind, "note_other", "nothing relevant")

    def page(q):
        result = memory_search(mind=mind, q=q, limit=5)
        return result.total, [(h.memory.key, h.score, h.snippet) for h in result.hits]

    for q in ("deplo*", "deployed server", 'serv* -"day 3"'):
        one_pass = page(q) if "*" in q else None
        monkeypatch.setattr(fts, "SEARCH_SQL_ONE_PASS", fts.SEARCH_SQL_BY_ROWID)
        by_rowid = page(q)
        monkeypatch.undo()
        if one_pass is not None:
            assert one_pass == by_rowid
        assert by_rowid[1] and all("«" in snippet for _, _, snippet in by_rowid[1])


def test_snippets_of_given_memories_are_the_same_both_ways(mind):
    """Hybrid search's snippets (fts.snippets): one pass for a prefix, by rowid otherwise;
    each the snippet `search` gives the same memory."""
    for i in range(12):
        remember(mind, f"note_deploy_{i}", f"deployed {'server ' * i}on day {i}", tags=["ops"])
    remember(mind, "note_other", "nothing relevant")
    for q in ("deplo*", "deployed server", 'serv* -"day 3"', "ops"):
        parsed = parse_query(q)
        hits = memory_search(mind=mind, q=q, limit=20, mode="keyword").hits
        memories = [h.memory for h in hits]
        expected = {h.memory.pk: h.snippet for h in hits}
        given = fts.snippets(mind_id=mind.pk, parsed=parsed, memories=memories)
        assert given == expected, q
        sql = fts.SNIPPETS_SQL_BY_ROWID if "*" in q else fts.SNIPPETS_SQL_ONE_PASS
        marks = ", ".join(["%s"] * len(memories))
        expression = fts.match_expression(mind_id=mind.pk, parsed=parsed)
        with connection.cursor() as cursor:
            cursor.execute(sql.format(marks=marks), [*(m.pk for m in memories), expression])
            other_way = dict(cursor.fetchall())
        assert other_way == expected, q


@pytest.mark.django_db(transaction=True)
def test_table_remake_loses_the_triggers_and_rebuild_index_restores_them(mind):
    # What a later migration altering a Memory field does on SQLite: Django copies the
    # table into a new one (new rowids, triggers dropped). The documented recipe repairs it.
    from django.db import models

    remember(mind, "note_a", "quokka")
    remember(mind, "note_b", "wombat")
    Memory.objects.filter(key="note_a").delete()  # a gap, so the copy renumbers rowids
    old = Memory._meta.get_field("verified_by")
    new = models.CharField(max_length=300, blank=True)
    new.set_attributes_from_name("verified_by")
    new.model = Memory
    try:
        with connection.schema_editor() as editor:
            editor.alter_field(Memory, old, new)
        assert schema_sql("trigger", fts.TRIGGER_NAMES) == {}
        assert fts.index_problems()
        assert fts.rebuild_index(using=connection.alias) == 1
        assert_index_sound()
        assert found(mind, "wombat") == ["note_b"]
        remember(mind, "note_c", "platypus")  # the triggers follow writes again
        assert found(mind, "platypus") == ["note_c"]
    finally:
        with connection.schema_editor() as editor:
            editor.alter_field(Memory, new, old)
        fts.rebuild_index()


@pytest.mark.django_db(transaction=True)
def test_migrate_after_a_table_remake_rebuilds_the_index_by_itself(mind):
    # A future migration altering a Memory field on SQLite: Django copies memories_memory
    # into a new table (triggers dropped, rowids renumbered). The post_migrate handler at the
    # end of that `migrate` restores the index; no step in the migration is needed.
    from django.db import models

    for key, word in [("note_a", "quokka"), ("note_b", "wombat"), ("note_c", "numbat")]:
        remember(mind, key, word, tags=["marsupial"])
    Memory.objects.filter(key="note_a").delete()  # a gap, so the copy renumbers rowids
    old = Memory._meta.get_field("verified_by")
    new = models.CharField(max_length=300, blank=True)
    new.set_attributes_from_name("verified_by")
    new.model = Memory
    try:
        with connection.schema_editor() as editor:
            editor.alter_field(Memory, old, new)
        assert schema_sql("trigger", fts.TRIGGER_NAMES) == {}
        call_command("migrate", verbosity=0)
        assert_index_sound()
        assert sorted(found(mind, "marsupial")) == ["note_b", "note_c"]
        assert found(mind, "numbat") == ["note_c"]
        remember(mind, "note_d", "platypus")  # the triggers follow writes again
        assert found(mind, "platypus") == ["note_d"]
        assert fts.ensure_index() is False  # nothing missing: nothing rebuilt
    finally:
        with connection.schema_editor() as editor:
            editor.alter_field(Memory, new, old)
        fts.rebuild_index()
