"""Search by meaning in PostgreSQL with pgvector (memories/search/pgvector.py, migration 0007).

Most tests need a PostgreSQL with the `vector` extension: `tests/pgvector_pass.py` starts one
and runs this module against it (the third pass of `make test`); elsewhere they are skipped.
The fallback tests run where the extension is absent (the PostgreSQL pass on a server
without it): the migration did nothing and search by meaning is numpy's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext

from memories.embeddings import get_embedder, outbox
from memories.models import MemoryVector
from memories.search import memory_search, memory_semantic_search, pgvector, semantic
from memories.search.query import meaning_text
from tests.factories import embed, remember

pytestmark = pytest.mark.django_db

FACTS = {
    "fact_manager": "Reports to Priya Raman, engineering manager of the platform group.",
    "fact_dog": "Has a border collie named Pixel.",
    "fact_cat": "Her sister keeps two cats, Miso and Tofu.",
    "preference_editor": "Uses Neovim with the LazyVim distribution.",
    "preference_coffee": "Drinks flat white, no sugar, never after 3pm.",
    "project_deploy": "Synapse is deployed with Docker Compose on a Hetzner VPS.",
    "project_db": "The production database is PostgreSQL 16 with nightly backups to S3.",
    "note_trip": "Flying to Lisbon in March for a conference on distributed systems.",
    "note_gym": "Goes climbing twice a week at the bouldering gym near the office.",
    "fact_language": "Speaks Portuguese and is learning Japanese.",
    "fact_kids": "Has a daughter, Ana, who started school this year.",
    "preference_meetings": "Prefers no meetings before 10am; deep work in the mornings.",
}
QUESTIONS = [
    "who is his boss",
    "does he have any animals",
    "which text editor",
    "where is it hosted",
    "what does he drink in the morning",
    "travel plans",
    "neovim",
    "database backups",
]


def vector_ready():
    if connection.vendor != "postgresql" or not pgvector.in_use():
        pytest.skip(
            "needs PostgreSQL with the vector extension: tests/pgvector_pass.py runs these "
            f"(this pass: {connection.vendor}, no pgvector)"
        )


@pytest.fixture
def with_pgvector(db):
    pgvector.forget()
    vector_ready()
    yield
    pgvector.forget()


@pytest.fixture
def embedder():
    found = get_embedder()
    assert found is not None
    return found


@pytest.fixture
def facts(mind):
    stored = {key: remember(mind, key, content) for key, content in FACTS.items()}
    embed(*stored.values())
    return stored


def numpy_only(monkeypatch):
    monkeypatch.setattr(pgvector, "in_use", lambda: False)
    semantic.forget_cached()


def both(question, *, mind, embedder, floor=-1.0, limit=1000):
    asked = {"mind_id": mind.pk, "embedder": embedder, "floor": floor, "limit": limit}
    question = meaning_text(question)
    return (
        pgvector.closeness(question=question, **asked),
        semantic.closeness(question=question, **asked),
    )


def assert_same(stored: semantic.Closeness, computed: semantic.Closeness):
    assert [i for i, _ in stored.ranked] == [i for i, _ in computed.ranked]
    assert [s for _, s in stored.ranked] == pytest.approx([s for _, s in computed.ranked], abs=1e-5)


# --- The migration ----------------------------------------------------------------------------


def column_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM information_schema.columns "
            "WHERE table_name = %s AND column_name = 'embedding'",
            [MemoryVector._meta.db_table],
        )
        return cursor.fetchone() is not None


def index_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'memory_vector_hnsw_384'")
        return cursor.fetchone() is not None


def test_the_migration_adds_an_hnsw_indexed_embedding_column(with_pgvector):
    assert column_exists() and index_exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'memory_vector_hnsw_384'")
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "vector_cosine_ops" in definition
    assert f"vector({pgvector.INDEXED_DIMENSIONS})" in definition


def test_the_migration_is_reversible(with_pgvector, mind, embedder):
    memory = remember(mind, "fact_dog", FACTS["fact_dog"])
    embed(memory)
    with connection.cursor() as cursor:  # the inserts' foreign key checks, before ALTER TABLE
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    [leaf] = [node for node in executor.loader.graph.leaf_nodes() if node[0] == "memories"]
    executor.migrate([("memories", "0006_vectors_and_embedding_jobs")])
    pgvector.forget()
    assert not column_exists() and not index_exists() and not pgvector.in_use()
    executor.loader.build_graph()
    executor.migrate([leaf])
    pgvector.forget()
    assert column_exists() and index_exists() and pgvector.in_use()
    # The vectors stored before are filled in on the way up.
    close = pgvector.closeness(
        mind_id=mind.pk, embedder=embedder, question="a dog", floor=-1.0, limit=10
    )
    assert [i for i, _ in close.ranked] == [memory.pk]


# --- The embedding column follows the BLOB --------------------------------------------------


def embedding_of(memory_id: str) -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT embedding::text FROM {MemoryVector._meta.db_table} WHERE memory_id = %s",
            [memory_id],
        )
        return cursor.fetchone()[0]


def values(text: str) -> np.ndarray:
    return np.array([np.float32(v) for v in text.strip("[]").split(",")], dtype=np.float32)


def test_the_embedding_is_the_stored_vector_exactly(with_pgvector, mind):
    memory = remember(mind, "fact_dog", FACTS["fact_dog"])
    embed(memory)
    stored = np.frombuffer(MemoryVector.objects.get(memory=memory).vector, dtype=np.float32)
    assert np.array_equal(values(embedding_of(memory.pk)).view(np.uint32), stored.view(np.uint32))


def test_every_float32_decodes_exactly_and_a_nan_gives_no_embedding(with_pgvector, mind):
    memory = remember(mind, "fact_dog", FACTS["fact_dog"])
    embed(memory)
    odd = np.array([0.0, -0.0, 1e-45, -3e-39, 3.4028235e38, -1.5, 0.1], dtype=np.float32)
    MemoryVector.objects.filter(memory=memory).update(vector=odd.tobytes())
    assert np.array_equal(values(embedding_of(memory.pk)).view(np.uint32), odd.view(np.uint32))
    MemoryVector.objects.filter(memory=memory).update(
        vector=np.array([1.0, np.nan], dtype=np.float32).tobytes()
    )
    assert embedding_of(memory.pk) is None


def test_a_new_vector_replaces_the_embedding(with_pgvector, mind):
    memory = remember(mind, "fact_dog", FACTS["fact_dog"])
    embed(memory)
    before = embedding_of(memory.pk)
    embed(remember(mind, "fact_dog", "Speaks Portuguese and is learning Japanese."))
    stored = np.frombuffer(MemoryVector.objects.get(memory=memory).vector, dtype=np.float32)
    after = embedding_of(memory.pk)
    assert after != before and np.array_equal(values(after), stored)


# --- Same answers as numpy --------------------------------------------------------------------


@pytest.mark.parametrize("question", QUESTIONS)
def test_closeness_is_the_numpy_paths(with_pgvector, facts, mind, embedder, question):
    stored, computed = both(question, mind=mind, embedder=embedder)
    assert len(stored.ranked) == len(FACTS)
    assert_same(stored, computed)
    assert stored.vectors == computed.vectors == len(FACTS)
    floor, limit = (stored.ranked[3][1] + stored.ranked[4][1]) / 2, 2
    assert_same(*both(question, mind=mind, embedder=embedder, floor=floor, limit=limit))
    assert_same(*both(question, mind=mind, embedder=embedder, floor=floor, limit=100))


def test_the_cosine_of_any_memory_is_the_numpy_paths(with_pgvector, facts, mind, embedder):
    stored, computed = both("who is his boss", mind=mind, embedder=embedder, limit=2)
    others = [m.pk for m in facts.values()]
    stored.need(others)
    for memory_id in others:
        assert stored.of(memory_id) == pytest.approx(computed.of(memory_id), abs=1e-5)
    stored.need(["mem_unknown"])
    assert stored.of("mem_unknown") is None


def only_the_hnsw_index():
    """For this test's transaction: no (mind, model) index, no sequential or bitmap scan, so
    the planner must use the HNSW index when it can (a handful of rows would not need it)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no DDL with checks pending
        cursor.execute("DROP INDEX memory_vector_mind_idx")
        cursor.execute("SELECT set_config('enable_seqscan', 'off', true)")
        cursor.execute("SELECT set_config('enable_bitmapscan', 'off', true)")


def test_the_hnsw_index_gives_the_exact_answer_here(with_pgvector, facts, mind, embedder):
    only_the_hnsw_index()
    with connection.cursor() as cursor:
        query = pgvector.literal(embedder.embed_query("who is his boss"))
        cursor.execute(
            "EXPLAIN " + pgvector._nearest_sql(embedder.dimensions),
            [query, mind.pk, embedder.model, 10],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "memory_vector_hnsw_384" in plan
    assert_same(*both("who is his boss", mind=mind, embedder=embedder))


def test_an_index_scan_that_ends_short_runs_again_exactly(
    with_pgvector, facts, mind, embedder, monkeypatch
):
    # One candidate per scan and no iterative scan: the index alone cannot give them all.
    monkeypatch.setattr(pgvector, "EF_SEARCH_MAX", 1)
    monkeypatch.setattr(pgvector, "ITERATIVE_SCAN", (99,))
    only_the_hnsw_index()
    with CaptureQueriesContext(connection) as queries:
        stored, computed = both("who is his boss", mind=mind, embedder=embedder)
    assert sum("ORDER BY distance" in q["sql"] for q in queries.captured_queries) == 2
    assert_same(stored, computed)


@dataclass(frozen=True)
class Small:
    """A model of another size than the index's: searched exactly."""

    model: str = "small-8"
    dimensions: int = 8

    def embed_query(self, text: str) -> np.ndarray:
        return vector_for(text)


def vector_for(text: str) -> np.ndarray:
    found = np.random.default_rng(sum(text.encode())).standard_normal(8).astype(np.float32)
    return found / np.linalg.norm(found)


def test_vectors_of_another_size_are_ranked_too(with_pgvector, mind):
    memories = [remember(mind, f"fact_{n}", f"Fact number {n}.") for n in range(20)]
    MemoryVector.objects.bulk_create(
        MemoryVector(
            memory=m, mind=mind, model="small-8", text_hash="-", vector=vector_for(m.key).tobytes()
        )
        for m in memories
    )
    stored, computed = both("fact", mind=mind, embedder=Small())
    assert len(stored.ranked) == 20
    assert_same(stored, computed)


# --- Through memory_search: store, embed, search -----------------------------------------------


def searched(mind, q, mode):
    page = memory_search(mind=mind, q=q, mode=mode, limit=100)
    return [(h.memory.key, h.match, round(h.score, 4), h.similarity) for h in page.hits]


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
@pytest.mark.parametrize("question", QUESTIONS)
def test_search_answers_as_with_numpy(with_pgvector, facts, mind, monkeypatch, mode, question):
    stored = searched(mind, question, mode)
    numpy_only(monkeypatch)
    computed = searched(mind, question, mode)
    assert [hit[:2] for hit in stored] == [hit[:2] for hit in computed]
    for a, b in zip(stored, computed, strict=True):
        assert a[2] == pytest.approx(b[2], abs=1e-4)
        assert (a[3] is None) == (b[3] is None)
        assert a[3] is None or a[3] == pytest.approx(b[3], abs=1e-5)


def test_a_stored_memory_is_found_by_meaning_once_the_worker_embedded_it(with_pgvector, mind):
    for key, content in FACTS.items():
        remember(mind, key, content)
    assert not MemoryVector.objects.exists()
    assert outbox.embed_pending() == len(FACTS)
    with CaptureQueriesContext(connection) as queries:
        page = memory_search(mind=mind, q="who is his boss", mode="hybrid")
    assert (page.hits[0].memory.key, page.hits[0].match) == ("fact_manager", "meaning")
    assert any("<=>" in q["sql"] for q in queries.captured_queries)
    similar = memory_semantic_search(mind=mind, q="does he have any animals", threshold=0)
    assert similar.similar[0][0].key == "fact_dog"


def test_another_minds_vectors_never_come_back(with_pgvector, facts, mind, stranger_mind, embedder):
    theirs = remember(stranger_mind.mind, "fact_manager", FACTS["fact_manager"])
    embed(theirs)
    stored, _ = both("who is his boss", mind=mind, embedder=embedder)
    assert theirs.pk not in dict(stored.ranked) and len(stored.ranked) == len(FACTS)
    stored.need([theirs.pk])
    assert stored.of(theirs.pk) is None
    for mode in ("semantic", "hybrid"):
        page = memory_search(mind=mind, q="who is his boss", mode=mode, limit=100)
        assert theirs.pk not in {h.memory.pk for h in page.hits}
    alone, _ = both("who is his boss", mind=stranger_mind.mind, embedder=embedder)
    assert [i for i, _ in alone.ranked] == [theirs.pk]


# --- Without the extension ------------------------------------------------------------------


def test_without_the_extension_search_by_meaning_uses_numpy(db, facts, mind):
    pgvector.forget()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            available = cursor.fetchone() is not None
        if available:
            pytest.skip("this PostgreSQL has pgvector: the tests above compare it with numpy")
        assert not column_exists() and not index_exists()
    assert not pgvector.in_use()
    with CaptureQueriesContext(connection) as queries:
        page = memory_search(mind=mind, q="who is his boss", mode="hybrid")
    assert (page.hits[0].memory.key, page.hits[0].match) == ("fact_manager", "meaning")
    assert not any("<=>" in q["sql"] for q in queries.captured_queries)
