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


def age(mind, *, back: timedelta = timedelta(days=40)) -> None:
    """Move the mind, its memories, their audit rows and spans `back`: all of it older than the
    month looked back on."""
    from django.db.models import F

    from memories.models import Memory, MemoryEvent, MemorySpan

    Memory.objects.filter(mind=mind).update(
        created_at=F("created_at") - back, updated_at=F("updated_at") - back
    )
    MemoryEvent.objects.filter(mind=mind).update(at=F("at") - back)
    MemorySpan.objects.filter(mind=mind).update(
        start=F("start") - back, updated_at=F("updated_at") - back
    )
    type(mind).objects.filter(pk=mind.pk).update(created_at=F("created_at") - back * 10)
    mind.refresh_from_db()


def measure(client: common.HttpClient, *, requests: int, warmup: int) -> list[common.Figure]:
    """Recall with budget=2000 today and as of 30 days ago, then the same pair in full."""
    from django.utils import timezone

    month_ago = quote((timezone.now() - timedelta(days=30)).isoformat())
    figures = []
    for name, path in (
        ("recall?budget=2000", "/memory/recall?budget=2000"),
        ("recall, full", "/memory/recall"),
    ):
        then_path = f"{path}{'&' if '?' in path else '?'}as_of={month_ago}"
        for label, url in (("today", path), ("as_of a month back", then_path)):
            figure = common.Figure(f"GET {name}, {label}")
            figure.timings = common.measure(
                lambda u=url: client.get(u), requests=requests, warmup=warmup
            )
            figures.append(figure)
    return figures


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
    if common.per_database(__file__, argv, args.database):
        return 0
    print(common.cpu())
    with common.BenchDatabase(database=args.database[0]) as db:
        _, mind, key = common.create_mind("As of")
        common.seed_memories(mind, args.memories)
        age(mind)
        started = time.perf_counter()
        done = a_month_of_writes(mind, args.writes)
        print(f"a month of writes {done} in {time.perf_counter() - started:.1f}s")
        db.settle()
        with common.Server(db, port=args.port, workers=args.workers) as server:
            figures = measure(server.client(token=key), requests=n, warmup=warm)
            for today, then in (figures[:2], figures[2:]):
                print(common.format_table([today, then], baseline=today))
            rows = [{"name": f.name, "p50": f.p50_ms, "p95": f.p95_ms} for f in figures]
            common.write_results(args.results, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
