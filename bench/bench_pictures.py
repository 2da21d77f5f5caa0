"""Benchmark: GET /memory/graph and GET /memory/timeline of a 10,000-memory mind, beside a
plain GET /memory page of the same mind.

Run it from the repository root:

    .venv/bin/python bench/bench_pictures.py            # 200 requests per figure
    .venv/bin/python bench/bench_pictures.py --database sqlite,postgres   # side by side

What it does: a fresh temporary database (bench/common.py), one mind seeded with 10,000
memories (bulk_create, 0 to 3 of 19 tags each) and their audit trail as the writes would
have left it (a create per memory at its creation, an update for one in five), then gunicorn
as `make run` starts it, on 127.0.0.1 only. Each figure is p50/p95 over N requests, one at a
time, and its p50 as a multiple of the baseline, `GET /memory?limit=100` (the list's first
page: scoping, one indexed read, the framework). Targets: graph p50 <= 300 ms, timeline
p50 <= 100 ms. The CPU and its flags are printed above the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

GRAPH = "/memory/graph?max_nodes=200"
TIMELINE = "/memory/timeline?period=day"
BASELINE = "/memory?limit=100"
TARGETS_MS = {"graph": 300.0, "timeline": 100.0}


def seed_events(mind, *, updated_share: int = 5) -> int:
    """The audit rows the mind's writes would have left: a create per memory at its
    creation, and an update at its last update for one memory in `updated_share`."""
    from django.db import transaction

    from memories.models import Memory, MemoryEvent

    events = []
    rows = Memory.objects.filter(mind=mind).values_list("id", "category", "key", "created_at")
    for i, (memory_id, category, key, at) in enumerate(rows.iterator()):
        common_fields = {"mind": mind, "memory_id": memory_id, "category": category, "key": key}
        events.append(
            MemoryEvent(
                **common_fields, action="create", actor="mk_bench", actor_type="agent", at=at
            )
        )
        if i % updated_share == 0:
            events.append(
                MemoryEvent(
                    **common_fields, action="update", actor="mk_bench", actor_type="agent", at=at
                )
            )
    with transaction.atomic():
        MemoryEvent.objects.bulk_create(events, batch_size=2000)
    return len(events)


def measure(client: common.HttpClient, *, requests: int, warmup: int) -> list[common.Figure]:
    """The baseline, the graph and the timeline of the client's mind, in that order."""
    shape = client.get(GRAPH).json()["stats"]
    days = client.get(TIMELINE).json()["total_periods"]
    return [
        common.Figure(
            f"GET {BASELINE} (baseline)",
            common.measure(lambda: client.get(BASELINE), requests=requests, warmup=warmup),
        ),
        common.Figure(
            f"GET {GRAPH}",
            common.measure(lambda: client.get(GRAPH), requests=requests, warmup=warmup),
            f"{shape['nodes']} nodes, {shape['edges']:,} edges; target p50 <= "
            f"{TARGETS_MS['graph']:.0f} ms",
        ),
        common.Figure(
            f"GET {TIMELINE}",
            common.measure(lambda: client.get(TIMELINE), requests=requests, warmup=warmup),
            f"{days} days; target p50 <= {TARGETS_MS['timeline']:.0f} ms",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--port", type=int, default=8712)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n, warm = args.requests, args.warmup
    print(common.cpu())
    if common.per_database(__file__, argv, args.database):
        return 0

    with common.BenchDatabase(keep=args.keep, database=args.database[0]) as db:
        started = time.perf_counter()
        _, mind, key = common.create_mind("Bench mind")
        common.seed_memories(mind, args.memories)
        events = seed_events(mind)
        db.settle()
        seeded = time.perf_counter() - started
        print(f"seeded {args.memories} memories, {events} audit rows in {seeded:.1f}s")
        with common.Server(db, port=args.port, workers=args.workers) as server:
            figures = measure(server.client(token=key), requests=n, warmup=warm)

    print()
    print(common.format_table(figures, baseline=figures[0]))
    print(f"\n(p50 / base: each p50 divided by the baseline's; {args.workers} workers)")
    common.write_results(
        args.results, [{"name": f.name, "p50": f.p50_ms, "p95": f.p95_ms} for f in figures]
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
