"""Benchmark: 100,000 memories through POST /memory/sync, beside a raw SQLite insert rate.

Run it from the repository root:

    .venv/bin/python bench/bench_sync.py                 # 100,000 memories, batches of 1,000
    .venv/bin/python bench/bench_sync.py --memories 20000 --clients 2 --port 8741
    .venv/bin/python bench/bench_sync.py --database sqlite,postgres    # both, side by side

What it does: a fresh temporary SQLite database (migrated), one mind, then gunicorn started
exactly as `make run` starts it (gunicorn.conf.py; WEB_CONCURRENCY workers; rate limit
off) on 127.0.0.1. The request bodies are built and JSON-encoded before the clock starts
(the figure is the server's, not the client's), then sent as `POST /memory/sync` with the
mind's key, `--clients` connections at a time. Every answer is checked (status 200, all
created, no errors) and the mind's total read back from /memory/stats.

Figures, in memories per second:
- sync, new: the 100,000 memories, each created (row, tag rows, audit row, search index);
- sync, unchanged: the same bodies again (every item looked up, nothing written);
- raw SQLite: the same rows inserted with the sqlite3 module (executemany, one commit per
  batch, WAL and synchronous=NORMAL like the server) into a table like memories_memory with
  its unique (mind, category, key) index, in a temp file: the floor a bulk path is judged by.
  It writes no tag rows, audit rows or search index, so the ratio is an upper bound on waste.

`--database postgres` does the same on a throwaway PostgreSQL database (bench/common.py);
its raw floors are psycopg executemany inserts, one commit per batch, into a similar table
and into memories_memory itself (indexes and the search trigger), under a second mind.
`--database sqlite,postgres` runs once per database, then prints both side by side.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from synapse_site.ids import random_ids


def build_memories(count: int, *, seed: int = 7) -> list[dict]:
    """`count` sync items like an agent's: a category, a key, 100-600 characters, 0-3 tags."""
    rng = random.Random(seed)
    memories = []
    for i in range(count):
        category = common.CATEGORIES[i % len(common.CATEGORIES)]
        item = {
            "category": category,
            "key": f"{category}_{i:06d}",
            "content": common.default_content(rng, i),
            "tags": rng.sample(common.TAGS, rng.randint(0, 3)),
            "priority": rng.choices(["low", "normal", "high", "critical"], [30, 55, 14, 1])[0],
        }
        if i % 50 == 0:
            item["expires_at"] = 4102444800
        memories.append(item)
    return memories


def send_all(server, key: str, bodies: list[bytes], *, clients: int, expect: str) -> float:
    """POST every body to /memory/sync; returns the wall-clock seconds. Checks each answer."""

    def post(chunk: list[bytes]) -> None:
        client = server.client(token=key)
        for body in chunk:
            client.conn.request(
                "POST",
                "/memory/sync",
                body=body,
                headers={**client.headers, "Content-Type": "application/json"},
            )
            response = client.conn.getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {data[:300]!r}")
            answer = json.loads(data)
            if answer["errors"] or answer[expect] != len(answer["results"]):
                raise RuntimeError(f"unexpected answer: {str(answer)[:300]}")

    chunks = [bodies[i::clients] for i in range(clients)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(post, chunk) for chunk in chunks]:
            future.result()
    return time.perf_counter() - started


RAW_TABLE = """
CREATE TABLE memories_memory (
    id varchar(32) NOT NULL PRIMARY KEY, category varchar(16) NOT NULL,
    key varchar(200) NOT NULL, content text NOT NULL, tags text NOT NULL,
    priority smallint NOT NULL, source varchar(8) NOT NULL, verified bool NOT NULL,
    confidence real NOT NULL, expires_at datetime NULL, created_at datetime NOT NULL,
    updated_at datetime NOT NULL, verified_at datetime NULL, verified_by varchar(254) NOT NULL,
    mind_id varchar(32) NOT NULL
)"""
RAW_INDEX = "CREATE UNIQUE INDEX memory_key ON memories_memory (mind_id, category, key)"
COLUMNS = (
    "id",
    "category",
    "key",
    "content",
    "tags",
    "priority",
    "source",
    "verified",
    "confidence",
    "expires_at",
    "created_at",
    "updated_at",
    "verified_at",
    "verified_by",
    "mind_id",
)
RANK = {"low": 0, "normal": 1, "high": 2, "critical": 3}


def raw_rows(memories: list[dict], *, mind_id: str, now: Any, batch: int = 1000) -> list[tuple]:
    """The memories as rows of COLUMNS, as an agent's new memories would be stored (the ids
    of each `batch` drawn together, as the sync endpoint draws a call's ids)."""
    ids = [
        pk
        for start in range(0, len(memories), batch)
        for pk in random_ids("mem_", len(memories[start : start + batch]))
    ]
    return [
        (
            pk,
            m["category"],
            m["key"],
            m["content"],
            json.dumps(m["tags"]),
            RANK[m["priority"]],
            "agent",
            False,
            0.7,
            None,
            now,
            now,
            None,
            "",
            mind_id,
        )
        for pk, m in zip(ids, memories, strict=True)
    ]


class RawSQLite:
    """Plain executemany inserts with a commit per batch (the sqlite3 module, WAL and
    synchronous=NORMAL like the server), into a fresh similar table or into memories_memory
    of a copy of `schema_copy` (a migrated database), timed a burst at a time: `insert`
    returns the seconds one burst took, so a floor can be sampled beside what it is compared
    with. A context manager; the copy is removed on exit."""

    def __init__(self, *, schema_copy: Path | None = None, mind_id: str = "m_b", batch: int):
        self.tmp = tempfile.TemporaryDirectory(prefix="synapse-raw-")
        path = Path(self.tmp.name) / "raw.sqlite3"
        if schema_copy is not None:
            shutil.copyfile(schema_copy, path)
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if schema_copy is None:
            self.db.execute(RAW_TABLE)
            self.db.execute(RAW_INDEX)
        self.mind_id = mind_id
        self.batch = batch
        self.sql = (
            f"INSERT INTO memories_memory ({', '.join(COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(COLUMNS))})"
        )

    def insert(self, memories: list[dict]) -> float:
        rows = raw_rows(
            memories,
            mind_id=self.mind_id,
            now=datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"),
            batch=self.batch,
        )
        started = time.perf_counter()
        for start in range(0, len(rows), self.batch):
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany(self.sql, rows[start : start + self.batch])
            self.db.execute("COMMIT")
        return time.perf_counter() - started

    def __enter__(self) -> RawSQLite:
        return self

    def __exit__(self, *exc) -> None:
        self.db.close()
        self.tmp.cleanup()


def raw_sqlite_rate(
    memories: list[dict], *, batch: int, schema_copy: Path | None = None, mind_id: str = "m_b"
) -> float:
    """Memories per second for RawSQLite's inserts of `memories`, in one burst."""
    with RawSQLite(schema_copy=schema_copy, mind_id=mind_id, batch=batch) as raw:
        return len(memories) / raw.insert(memories)


def raw_postgres_rate(
    memories: list[dict], *, batch: int, url: str, mind_id: str, our_schema: bool
) -> float:
    """raw_sqlite_rate's twin with psycopg: into a similar table (created, then dropped) or
    into memories_memory (every index and the search trigger) for `mind_id`."""
    import psycopg

    table = "memories_memory" if our_schema else "bench_raw_memories"
    create = RAW_TABLE.replace("datetime", "timestamptz").replace("memories_memory", table)
    placeholders = ", ".join(["%s"] * len(COLUMNS))
    sql = f"INSERT INTO {table} ({', '.join(COLUMNS)}) VALUES ({placeholders})"
    if our_schema:
        sql = sql.replace("%s, %s, %s, %s, %s, %s", "%s, %s, %s, %s, %s::jsonb, %s", 1)
    rows = raw_rows(memories, mind_id=mind_id, now=datetime.now(UTC), batch=batch)
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1)) as db:
        if not our_schema:
            db.execute(create)
            db.execute(RAW_INDEX.replace("memories_memory", table))
            db.commit()
        started = time.perf_counter()
        with db.cursor() as cursor:
            for start in range(0, len(rows), batch):
                cursor.executemany(sql, rows[start : start + batch])
                db.commit()
        seconds = time.perf_counter() - started
        if not our_schema:
            db.execute(f"DROP TABLE {table}")
            db.commit()
    return len(rows) / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000, help="memories per call (max 1000)")
    parser.add_argument("--clients", type=int, default=1, help="connections sending at once")
    parser.add_argument("--port", type=int, default=8740)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    heading = "memories per second"
    if common.per_database(__file__, argv, args.database, heading=heading, metrics=("memories/s",)):
        return 0
    database = args.database[0]

    memories = build_memories(args.memories)
    bodies = [
        json.dumps({"memories": memories[i : i + args.batch]}).encode()
        for i in range(0, len(memories), args.batch)
    ]
    size = sum(len(b) for b in bodies) / len(bodies) / 1024
    print(
        f"{args.memories:,} memories in {len(bodies)} calls of {args.batch} "
        f"(~{size:.0f} KiB each), {args.clients} client(s), {args.workers} gunicorn workers"
    )

    with common.BenchDatabase(keep=args.keep, database=database) as db:
        _, mind, key = common.create_mind("Bench sync")
        from django.db import connections

        connections.close_all()  # checkpoints the WAL: the file alone holds the schema
        if database == "sqlite":
            schema_copy = db.dir / "schema-copy.sqlite3"
            shutil.copyfile(db.path, schema_copy)
        with common.Server(db, port=args.port, workers=args.workers) as server:
            created = send_all(server, key, bodies, clients=args.clients, expect="created")
            unchanged = send_all(server, key, bodies, clients=args.clients, expect="unchanged")
            total = server.client(token=key).get("/memory/stats").json()["total"]
        if total != args.memories:
            raise RuntimeError(f"the mind holds {total} memories, expected {args.memories}")
        if database == "sqlite":
            raw = raw_sqlite_rate(memories, batch=args.batch)
            raw_schema = raw_sqlite_rate(
                memories, batch=args.batch, schema_copy=schema_copy, mind_id=mind.pk
            )
        else:
            _, raw_mind, _ = common.create_mind("Bench raw")
            connections.close_all()
            raw = raw_postgres_rate(
                memories, batch=args.batch, url=db.url, mind_id=raw_mind.pk, our_schema=False
            )
            raw_schema = raw_postgres_rate(
                memories, batch=args.batch, url=db.url, mind_id=raw_mind.pk, our_schema=True
            )

    new_rate = args.memories / created
    engine = "SQLite" if database == "sqlite" else "PostgreSQL"
    lines = [
        ("POST /memory/sync, new", new_rate, f"{created:.1f} s"),
        ("POST /memory/sync, unchanged", args.memories / unchanged, f"{unchanged:.1f} s"),
        ("raw inserts, similar table", raw, f"{engine}, executemany, commit per batch"),
        ("raw inserts, our schema", raw_schema, "+ every index and the search trigger"),
    ]
    print(f"\n{'':30}  {'memories/s':>11}")
    for name, rate, note in lines:
        print(f"{name:30}  {rate:11,.0f}  {note}")
    print(
        f"\nsync (new) takes {raw / new_rate:.1f}x the time of raw inserts into a similar table, "
        f"{raw_schema / new_rate:.1f}x that of raw inserts into our schema"
    )
    common.write_results(
        args.results, [{"name": name, "memories/s": rate} for name, rate, _ in lines]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
