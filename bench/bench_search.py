"""Search speed: one mind of 10,000 memories inside a database of 100,000.

    .venv/bin/python bench/bench_search.py [--requests 200] [--port 8721] [--keep]
    .venv/bin/python bench/bench_search.py --database sqlite,postgres   # both, side by side

Seeds a fresh SQLite file (bench/common.py: bulk_create, the FTS triggers fire as in
production): the measured mind holds 10,000 memories, nine other minds 10,000 each. Planted
words: "zeppelin" in 3 of the mind's memories (rare), "kubernetes" in about 30% of the
other minds' memories but only 5 of this mind's (common across the database, rare here).
The filler vocabulary is small, so words like "invoice" occur in about a third of all
memories (common everywhere).

For each query it reports, side by side, in the same run:
- GET /memory/search through gunicorn (started as `make run` does), p50 and p95;
- the selector memory_search() in-process (no HTTP, no auth);
- engine floors, with the sqlite3 module directly on the same file: the FTS5 query alone
  (`SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 20`), once with our
  mind-scoped expression and once with the plain any-word expression over the whole
  database; the smaller of the two is "the engine floor";
- the framework floor: GET /health through the same server;
- ratio = search p50 / (engine floor p50 + framework floor p50); the target is <= 2.
It also times the scoping alternative (no mind token; filter the joined rows by mind_id)
for the term that is common elsewhere but rare in this mind: the reason for the token.
On PostgreSQL (`--database postgres`, a throwaway database on BENCH_POSTGRES_URL's server)
the engine floors are the same search done bare with psycopg: the tsquery over the mind
(GIN on mind_id + vector) and over the whole database; the token comparison is SQLite's.
With several databases the script runs once per database and ends with the figures side
by side.
Loopback only, bounded loops, nothing asserted.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

MIND_SIZE = 10_000
OTHER_MINDS = 9
RARE_DOCS = {17, 4242, 9001}
QUERIES = [
    ("rare word", "zeppelin"),
    ("common word", "invoice"),
    ("common elsewhere, rare here", "kubernetes"),
    ("natural question", "how do we deploy the docker server for a customer"),
    ("phrase", '"docker server"'),
    ("prefix", "deplo*"),
]


def target_content(rng, index: int) -> str:
    text = common.default_content(rng, index)
    if index in RARE_DOCS:
        text += " The zeppelin museum trip is planned."
    if index % 2000 == 3:
        text += " Kubernetes was evaluated and rejected."
    return text


def other_content(rng, index: int) -> str:
    text = common.default_content(rng, index)
    if rng.random() < 0.3:
        text += " Runs on kubernetes."
    return text


def interleaved(calls: dict, *, rounds: int, warmup: int = 5) -> dict[str, list[float]]:
    """Seconds per call for each named call, one call of each per round (after a warmup)."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - started)
    return timings


def check(reply):
    if reply.status != 200:
        raise RuntimeError(f"HTTP {reply.status}: {reply.body[:300]!r}")
    return reply


def sqlite_floor_calls(raw: sqlite3.Connection, *, mind_id: str, q: str) -> dict:
    """The engine floors of one search, as calls on a plain sqlite3 connection: the bare
    FTS5 query (`MATCH … ORDER BY rank LIMIT 20`) with our mind-scoped expression
    ("fts_mind") and with the plain words over the whole database ("fts_all")."""
    from memories.search import sqlite as backend
    from memories.search.query import parse_query

    sql = (
        f"SELECT rowid FROM {backend.FTS_TABLE} WHERE {backend.FTS_TABLE} MATCH ? "
        "ORDER BY rank LIMIT 20"
    )
    parsed = parse_query(q)
    scoped = backend.match_expression(mind_id=mind_id, parsed=parsed)
    plain = " OR ".join(t.fts5() for t in parsed.required + parsed.optional)
    if parsed.required:
        plain = " AND ".join(t.fts5() for t in parsed.required)
    return {
        "fts_mind": lambda: raw.execute(sql, (scoped,)).fetchall(),
        "fts_all": lambda: raw.execute(sql, (plain,)).fetchall(),
    }


SIDE_BY_SIDE = ("total", "HTTP p50", "HTTP p95", "selector p50", "engine p50")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--port", type=int, default=8721, help="8720-8729")
    parser.add_argument("--keep", action="store_true", help="keep the temp database")
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    requests = max(10, min(args.requests, 2000))
    heading = "ms (p50 unless marked); engine = the bare query's floor"
    if common.per_database(__file__, argv, args.database, heading=heading, metrics=SIDE_BY_SIDE):
        return
    if args.database == ["postgres"]:
        postgres_main(args, requests)
        return

    with common.BenchDatabase(keep=args.keep) as db:
        mind, key = seed(db)

        import gc

        from django.db import connection

        # Measure a steady state, not the moment after a bulk load: fold the write-ahead
        # log into the database file and keep the seeding garbage out of the collector.
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        gc.collect()
        gc.freeze()

        from memories.search import memory_search
        from memories.search import sqlite as backend
        from memories.search.query import parse_query

        raw = sqlite3.connect(db.path)
        raw.execute("PRAGMA cache_size=-20000")

        rows = []
        with common.Server(db, port=args.port) as server:
            client = server.client(token=key)
            anonymous = server.client()
            for label, q in QUERIES:
                path = "/memory/search?" + urlencode({"q": q, "limit": 20})
                total = client.get(path).json()["total"]
                # One sample of each per round, so load on the machine hits all alike.
                samples = interleaved(
                    {
                        "http": lambda p=path: check(client.get(p)),
                        "health": lambda: check(anonymous.get("/health")),
                        "selector": lambda q=q: memory_search(mind=mind, q=q, limit=20),
                        **sqlite_floor_calls(raw, mind_id=mind.pk, q=q),
                    },
                    rounds=requests,
                )
                rows.append((label, total, samples))

        # The alternative to the mind token: MATCH over every mind, filter after the join.
        alt_sql = (
            f"SELECT m.id, bm25({backend.FTS_TABLE}) AS r FROM {backend.FTS_TABLE} "
            f"JOIN memories_memory AS m ON m.rowid = {backend.FTS_TABLE}.rowid "
            f"WHERE {backend.FTS_TABLE} MATCH %s AND m.mind_id = %s ORDER BY r LIMIT 20"
        )
        alt_expr = '{key tags content} : ("kubernetes")'
        tok_expr = backend.match_expression(mind_id=mind.pk, parsed=parse_query("kubernetes"))
        tok_sql = alt_sql.replace("JOIN", "CROSS JOIN")

        def run(sql, expression):
            with connection.cursor() as cursor:
                cursor.execute(sql, [expression, mind.pk])
                return cursor.fetchall()

        scoping = interleaved(
            {
                "token": lambda: run(tok_sql, tok_expr),
                "filter": lambda: run(alt_sql, alt_expr),
            },
            rounds=requests,
        )

        def ms(timings, pct=50) -> float:
            return common.percentile(timings, pct) * 1000

        print(
            f"\n{'query':28} {'total':>5}  {'HTTP p50':>8} {'p95':>6}  {'selector':>8}  "
            f"{'FTS5 mind':>9} {'FTS5 all':>8}  {'/health':>7}  {'floor':>6}  {'ratio':>5}"
        )
        print("-" * 108)
        for label, total, t in rows:
            engine = min(ms(t["fts_mind"]), ms(t["fts_all"]))
            floor = engine + ms(t["health"])
            print(
                f"{label:28} {total:5d}  {ms(t['http']):8.2f} {ms(t['http'], 95):6.2f}  "
                f"{ms(t['selector']):8.2f}  {ms(t['fts_mind']):9.2f} {ms(t['fts_all']):8.2f}  "
                f"{ms(t['health']):7.2f}  {floor:6.2f}  {ms(t['http']) / floor:4.2f}x"
            )
        print(
            "\nms, p50 unless marked; all columns of a row sampled in the same rounds.\n"
            "selector = memory_search() in-process; FTS5 mind / all = the bare FTS5 query "
            "(sqlite3 module) with our mind-scoped expression / with the plain words over "
            "the whole database;\nfloor = min(FTS5 mind, FTS5 all) + GET /health; "
            "ratio = HTTP p50 / floor (target <= 2)."
        )
        print(
            f"Scoping 'kubernetes' (common elsewhere, rare here), same bare SQL: mind token in "
            f"MATCH {ms(scoping['token']):.2f} ms vs. filter by mind after the join "
            f"{ms(scoping['filter']):.2f} ms."
        )
        raw.close()
        common.write_results(
            args.results,
            [
                {
                    "name": label,
                    "total": total,
                    "HTTP p50": ms(t["http"]),
                    "HTTP p95": ms(t["http"], 95),
                    "selector p50": ms(t["selector"]),
                    "engine p50": min(ms(t["fts_mind"]), ms(t["fts_all"])),
                }
                for label, total, t in rows
            ],
        )


def seed(db) -> tuple:
    started = time.perf_counter()
    _, mind, key = common.create_mind("Measured")
    common.seed_memories(mind, MIND_SIZE, seed=1, content=target_content)
    for n in range(OTHER_MINDS):
        _, other, _ = common.create_mind(f"Other {n}")
        common.seed_memories(other, MIND_SIZE, seed=100 + n, content=other_content)
    print(
        f"seeded {MIND_SIZE * (OTHER_MINDS + 1):,} memories ({MIND_SIZE:,} in the measured "
        f"mind) on {db.database} in {time.perf_counter() - started:.0f}s",
        file=sys.stderr,
    )
    return mind, key


def postgres_main(args, requests: int) -> None:
    """The same figures on PostgreSQL; engine floors with psycopg on the same database."""
    with common.BenchDatabase(keep=args.keep, database="postgres") as db:
        mind, key = seed(db)
        db.settle()
        import gc

        import psycopg

        from memories.search import memory_search
        from memories.search import postgres as backend
        from memories.search.query import parse_query

        gc.collect()
        gc.freeze()
        # No server-side prepared statements (psycopg prepares after 5 runs; Django does not):
        # a generic plan would not be the plan the server uses.
        raw = psycopg.connect(
            db.url.replace("postgres://", "postgresql://", 1),
            autocommit=True,
            prepare_threshold=None,
        )
        floor_sql = (
            "SELECT id FROM memories_memory WHERE /*scope*/ search_vector @@ "
            f"to_tsquery('{backend.CONFIG}', %(q)s) ORDER BY ts_rank({backend._RANK_WEIGHTS}, "
            f"search_vector, to_tsquery('{backend.CONFIG}', %(q)s), "
            f"{backend._RANK_NORMALIZATION}) DESC LIMIT 20"
        )
        mind_sql = floor_sql.replace("/*scope*/", "mind_id = %(mind)s AND")
        all_sql = floor_sql.replace("/*scope*/", "")

        rows = []
        with common.Server(db, port=args.port) as server:
            client = server.client(token=key)
            anonymous = server.client()
            for label, q in QUERIES:
                path = "/memory/search?" + urlencode({"q": q, "limit": 20})
                total = client.get(path).json()["total"]
                expression = backend.to_tsquery_text(parse_query(q))
                params = {"q": expression, "mind": mind.pk}
                samples = interleaved(
                    {
                        "http": lambda p=path: check(client.get(p)),
                        "health": lambda: check(anonymous.get("/health")),
                        "selector": lambda q=q: memory_search(mind=mind, q=q, limit=20),
                        "fts_mind": lambda p=params: raw.execute(mind_sql, p).fetchall(),
                        "fts_all": lambda p=params: raw.execute(all_sql, p).fetchall(),
                    },
                    rounds=requests,
                )
                rows.append((label, total, samples))
        raw.close()

        def ms(timings, pct=50) -> float:
            return common.percentile(timings, pct) * 1000

        print(
            f"\n{'query':28} {'total':>5}  {'HTTP p50':>8} {'p95':>6}  {'selector':>8}  "
            f"{'tsq mind':>9} {'tsq all':>8}  {'/health':>7}  {'floor':>6}  {'ratio':>5}"
        )
        print("-" * 108)
        for label, total, t in rows:
            floor = min(ms(t["fts_mind"]), ms(t["fts_all"])) + ms(t["health"])
            print(
                f"{label:28} {total:5d}  {ms(t['http']):8.2f} {ms(t['http'], 95):6.2f}  "
                f"{ms(t['selector']):8.2f}  {ms(t['fts_mind']):9.2f} {ms(t['fts_all']):8.2f}  "
                f"{ms(t['health']):7.2f}  {floor:6.2f}  {ms(t['http']) / floor:4.2f}x"
            )
        print(
            "\nms, p50 unless marked; PostgreSQL. tsq mind / all = the bare ranked tsquery "
            "(psycopg) over the mind / over the whole database; floor = min of the two + "
            "GET /health."
        )
        common.write_results(
            args.results,
            [
                {
                    "name": label,
                    "total": total,
                    "HTTP p50": ms(t["http"]),
                    "HTTP p95": ms(t["http"], 95),
                    "selector p50": ms(t["selector"]),
                    "engine p50": min(ms(t["fts_mind"]), ms(t["fts_all"])),
                }
                for label, total, t in rows
            ],
        )


if __name__ == "__main__":
    main()
