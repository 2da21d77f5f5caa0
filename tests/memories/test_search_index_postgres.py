"""PostgreSQL: the tsvector column follows every write (triggers), the command checks and
rebuilds it, the migration is reversible, and every parsed query is valid tsquery syntax."""

from __future__ import annotations

import importlib
import random

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memories.actors import Actor
from memories.models import Memory
from memories.search import memory_search
from memories.search import postgres as pg
from memories.search.query import SearchQueryError, parse_query
from memories.services import memory_delete, memory_update, memory_upsert
from tests.api.test_memory_search import HOSTILE
from tests.factories import memory_row

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_only]


def found(mind, q: str) -> list[str]:
    return [hit.memory.key for hit in memory_search(mind=mind, q=q).hits]


def remember(mind, key, content, tags=(), category="note") -> Memory:
    return memory_row(mind, key, content, category=category, tags=list(tags))


def run_sql(*statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def column_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'memories_memory' "
            "AND column_name = %s",
            [pg.VECTOR_COLUMN],
        )
        return cursor.fetchone() is not None


def test_migration_sql_is_the_modules_sql():
    migration = importlib.import_module("memories.migrations.0003_search_index_postgres")
    assert tuple(migration.FORWARD) == pg.MIGRATION_SQL
    assert tuple(migration.BACKWARD) == pg.REVERSE_SQL


def test_migration_creates_a_sound_index(mind):
    remember(mind, "note_a", "alpha")
    assert pg.index_problems() == []


@pytest.mark.django_db(transaction=True)
def test_migration_is_reversible(mind):
    remember(mind, "note_before", "zeppelin")
    call_command("migrate", "memories", "0002", verbosity=0)
    assert not column_exists()
    call_command("migrate", verbosity=0)
    # Memories stored before the index existed are indexed by the migration.
    assert found(mind, "zeppelin") == ["note_before"]
    assert pg.index_problems() == []


def test_writes_are_followed(mind):
    memory = remember(mind, "preference_editor", "Neovim", tags=["tools", "münchen"])
    assert found(mind, "editor") == found(mind, "munchen") == ["preference_editor"]
    memory.content = "Helix"
    memory.key = "preference_terminal_tool"
    memory.tags = ["beta"]
    memory.save()
    assert found(mind, "neovim") == found(mind, "editor") == found(mind, "munchen") == []
    assert found(mind, "helix terminal beta") == ["preference_terminal_tool"]
    Memory.objects.filter(pk=memory.pk).update(verified=True, priority=3)
    Memory.objects.filter(mind=mind).update(content="wombat")
    assert found(mind, "wombat") == ["preference_terminal_tool"]
    Memory.objects.filter(mind=mind).delete()
    assert found(mind, "wombat") == []
    assert pg.index_problems() == []


def test_services_keep_the_index_in_sync(mind, owner):
    actor = Actor.for_user(owner)
    created = memory_upsert(
        mind=mind, actor=actor, category="preference", key="preference_editor", content="Neovim"
    ).memory
    memory_update(memory=created, actor=actor, key="preference_text_editor", tags=["modal"])
    assert found(mind, "text modal") == ["preference_text_editor"]
    memory_delete(memory=created, actor=actor)
    assert found(mind, "neovim") == []
    assert pg.index_problems() == []


def test_non_array_tags_do_not_break_indexing(mind):
    # The JSON column could hold anything written around the services; indexing must not fail.
    memory = remember(mind, "note_x", "quokka")
    Memory.objects.filter(pk=memory.pk).update(tags={"not": "a list"})
    assert found(mind, "quokka") == ["note_x"]


def test_check_fails_when_a_trigger_is_missing_and_rebuild_repairs(mind, capsys):
    run_sql("DROP TRIGGER memories_memory_search_ai ON memories_memory")
    remember(mind, "note_x", "quokka")  # written while the trigger is gone
    with pytest.raises(CommandError):
        call_command("search_index", "--check")
    err = capsys.readouterr().err
    assert "memories_memory_search_ai" in err and "1 memories" in err
    assert found(mind, "quokka") == []

    call_command("search_index", "--rebuild", "--check")
    assert "Search index OK" in capsys.readouterr().out
    assert found(mind, "quokka") == ["note_x"]
    remember(mind, "note_y", "wombat")  # the triggers follow writes again
    assert found(mind, "wombat") == ["note_y"]


@pytest.mark.parametrize("q", HOSTILE)
def test_every_parsed_hostile_query_is_valid_tsquery(q):
    try:
        parsed = parse_query(q)
    except SearchQueryError:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_tsquery(%s, %s)", [pg.CONFIG, pg.to_tsquery_text(parsed)])


def test_random_text_always_makes_valid_tsquery():
    rng = random.Random(7)
    alphabet = "ab Zé日\"'\\-*:&|!()<>@.,;_ \t\u00a0\u3000\u2019«»$%{}[]^~`#+=/?0123456789"
    with connection.cursor() as cursor:
        for _ in range(300):
            q = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
            try:
                expression = pg.to_tsquery_text(parse_query(q))
            except SearchQueryError:
                continue
            cursor.execute("SELECT to_tsquery(%s, %s)", [pg.CONFIG, expression])


def test_snippet_keeps_the_original_characters(mind):
    remember(
        mind,
        "note_push",
        "Once force-pushed to main (node.js repo) and lost a colleague's commits; "
        + "filler words " * 20,
    )
    [hit] = memory_search(mind=mind, q="colleague").hits
    assert hit.snippet.startswith("…main (node.js repo) and lost a «colleague»'s commits; ")
    assert hit.snippet.endswith("…")
    [hit] = memory_search(mind=mind, q="node.js").hits
    assert "(«node».«js» repo)" in hit.snippet
    remember(mind, "identity_name", "Michael Schäfer, goes by Mike.")
    [hit] = memory_search(mind=mind, q="schafer").hits
    assert hit.snippet == "Michael «Schäfer», goes by Mike."
