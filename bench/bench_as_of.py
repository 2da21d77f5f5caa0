"""Benchmark: recall of a mind as it was a month ago (`as_of`), beside today's recall.

    .venv/bin/python bench/bench_as_of.py [--memories 10000] [--writes 3000] [--requests 30]

A fresh temporary database (bench/common.py), one mind of `--memories` memories seeded more
than a month back, then a month of `--writes` writes through memories.services, spread over
the last 30 days (about 60% updates of content, 25% new memories, 10% deletes, 5%
verifications), each recorded in the audit trail as a live write is. gunicorn as `make run`
starts it, then over HTTP with the mind's key:

- GET /memory/recall?budget=2000 (baseline: today)
- GET /memory/recall?budget=2000&as_of=<30 days ago> (rebuilt from the trail, walking back)
- the same pair without a budget (every live memory)

Printed: p50/p95 and the ratio to today's recall measured in the same run, and the CPU flags.
Target: recall as of a month back at most 3x today's.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def a_month_of_writes(mind, count: int, *, seed: int = 3) -> dict[str, int]:
    """`count` writes over the last 30 days, in time order, through the services."""
    from django.utils import timezone

    from memories import services
    from memories.actors import Actor
    from memories.models import Memory

    rng = random.Random(seed)
    agent = Actor(kind="agent", name=mind.key_prefix)
    person = Actor(kind="user", name=mind.owner.email)
    start = timezone.now() - timedelta(days=30)
    ids = list(Memory.objects.filter(mind=mind).values_list("id", flat=True))
    done = {"update": 0, "store": 0, "delete": 0, "verify": 0}
    for index in range(count):
        now = start + timedelta(seconds=(30 * 86400 - 60) * index / count)
        roll = rng.random()
        if roll < 0.25 or not ids:
            body = {
                "category": "note",
                "key": f"month_{index}",
                "content": common.sentence(rng, 12),
            }
            ids.append(services.memory_store(mind=mind, actor=agent, body=body, now=now).memory.pk)
            done["store"] += 1
            continue
        memory = Memory.objects.get(pk=rng.choice(ids))
        if roll < 0.85:
            body = {"content": common.sentence(rng, 12)}
            services.memory_change(memory=memory, actor=agent, body=body, now=now)
            done["update"] += 1
        elif roll < 0.95:
            services.memory_delete(memory=memory, actor=agent, now=now)
            ids.remove(memory.pk)
            done["delete"] += 1
        else:
            services.memory_verify(memory=memory, actor=person, now=now)
            done["verify"] += 1
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=3_000)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--port", type=int, default=8716)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    n, warm = args.requests, args.warmup
    if len(args.database) > 1:
        rest = ["--memories", str(args.memories), "--writes", str(args.writes)]
        rest += ["--requests", str(n), "--warmup", str(warm), "--port", str(args.port)]
        results = common.run_per_database(__file__, rest, args.database)
        print("\nms")
        print(common.format_side_by_side(results, ("p50", "p95")))
        return 0
    print(common.cpu())
    with common.BenchDatabase(database=args.database[0]) as db:
        from django.db.models import F
        from django.utils import timezone

        from memories.models import Memory

        _, mind, key = common.create_mind("As of")
        common.seed_memories(mind, args.memories)
        # Everything seeded, and the mind itself, is older than the month looked back on.
        back = timedelta(days=40)
        Memory.objects.filter(mind=mind).update(
            created_at=F("created_at") - back, updated_at=F("updated_at") - back
        )
        type(mind).objects.filter(pk=mind.pk).update(
            created_at=timezone.now() - timedelta(days=400)
        )
        mind.refresh_from_db()
        started = time.perf_counter()
        done = a_month_of_writes(mind, args.writes)
        print(f"a month of writes {done} in {time.perf_counter() - started:.1f}s")
        db.settle()
        month_ago = quote((timezone.now() - timedelta(days=30)).isoformat())
        with common.Server(db, port=args.port, workers=args.workers) as server:
            client = server.client(token=key)
            pairs = [
                ("recall?budget=2000", "/memory/recall?budget=2000"),
                ("recall, full", "/memory/recall"),
            ]
            rows = []
            for name, path in pairs:
                today = common.Figure(f"GET {name}, today")
                today.timings = common.measure(
                    lambda p=path: client.get(p), requests=n, warmup=warm
                )
                then = common.Figure(f"GET {name}, as_of a month back")
                then.timings = common.measure(
                    lambda p=path: client.get(f"{p}{'&' if '?' in p else '?'}as_of={month_ago}"),
                    requests=n,
                    warmup=warm,
                )
                print(common.format_table([today, then], baseline=today))
                rows += [{"name": f.name, "p50": f.p50_ms, "p95": f.p95_ms} for f in (today, then)]
            common.write_results(args.results, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
