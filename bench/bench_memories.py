"""Benchmark: recall of a 10,000-memory mind and POST /memory, next to GET /health.

Run it from the repository root:

    .venv/bin/python bench/bench_memories.py            # 200 requests per figure
    .venv/bin/python bench/bench_memories.py --requests 50 --port 8711 --workers 2
    .venv/bin/python bench/bench_memories.py --database sqlite,postgres   # side by side

What it does: a fresh temporary SQLite database (migrated), one mind seeded with 10,000
memories through the ORM (bulk_create), then gunicorn started exactly as `make run` starts
it (gunicorn.conf.py; HOST, PORT, WEB_CONCURRENCY; a long random SECRET_KEY; rate limit
off), on 127.0.0.1 only. Requests are sent one at a time over a keep-alive http.client
connection; each figure is p50/p95 over N requests after a short warm-up, and its p50 as a
multiple of `GET /health` (the framework floor: routing, middleware, one COUNT each on three
tables). The server is stopped and the temporary directory removed at the end.

Figures:
- GET /health
- GET /memory/recall, full text (all ~9,800 live memories of the mind)
- GET /memory/recall?budget=2000
- POST /memory, a new key each time (the upsert path, with audit); if the endpoint is not
  there yet (404/405) the row says so instead of failing.

`--database postgres` runs the same on a throwaway PostgreSQL database (bench/common.py);
`--database sqlite,postgres` runs once per database and ends with both side by side.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--port", type=int, default=8711)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n, warm = args.requests, args.warmup
    if common.per_database(__file__, argv, args.database):
        return 0

    with common.BenchDatabase(keep=args.keep, database=args.database[0]) as db:
        started = time.perf_counter()
        _, mind, key = common.create_mind("Bench mind")
        common.seed_memories(mind, args.memories)
        db.settle()
        seeded = time.perf_counter() - started
        print(f"seeded {args.memories} memories in {seeded:.1f}s ({db.path or db.url})")

        with common.Server(db, port=args.port, workers=args.workers) as server:
            client = server.client(token=key)
            full = client.get("/memory/recall")
            budgeted = client.get("/memory/recall?budget=2000")
            print(
                f"recall answers: full {len(full.body) / 1024:.0f} KiB, "
                f"budget=2000 {len(budgeted.body)} bytes / {len(budgeted.body.decode())} chars"
            )

            health = common.Figure(
                "GET /health",
                common.measure(lambda: client.get("/health"), requests=n, warmup=warm),
            )
            figures = [health]
            figures.append(
                common.Figure(
                    f"GET /memory/recall ({args.memories} memories, full)",
                    common.measure(lambda: client.get("/memory/recall"), requests=n, warmup=warm),
                )
            )
            figures.append(
                common.Figure(
                    "GET /memory/recall?budget=2000",
                    common.measure(
                        lambda: client.get("/memory/recall?budget=2000"), requests=n, warmup=warm
                    ),
                )
            )
            figures.append(post_figure(client, n, warm))

    print()
    print(common.format_table(figures, baseline=health))
    print(f"\n(p50 / base: each p50 divided by the GET /health p50; {args.workers} workers)")
    common.write_results(
        args.results,
        [{"name": f.name, "p50": f.p50_ms, "p95": f.p95_ms} for f in figures if f.timings],
    )
    return 0


def post_figure(client: common.HttpClient, requests: int, warmup: int) -> common.Figure:
    name = "POST /memory (new key)"
    counter = iter(range(10**9))

    def store():
        i = next(counter)
        return client.post(
            "/memory",
            json={
                "category": "note",
                "key": f"note_bench_{i:07d}",
                "content": f"Benchmark note {i}: the user prefers short answers.",
                "tags": ["bench", "notes"],
                "priority": "normal",
            },
        )

    probe = store()
    if probe.status in (404, 405):
        return common.Figure(name, note=f"not available yet (HTTP {probe.status})")
    return common.Figure(name, common.measure(store, requests=requests, warmup=warmup))


if __name__ == "__main__":
    raise SystemExit(main())
