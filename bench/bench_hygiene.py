"""Benchmark: what the near-repeat check costs a store, beside the same stores without it.

    .venv/bin/python bench/bench_hygiene.py [--memories 10000] [--rounds 200]

A fresh temporary SQLite database (bench/common.py), one mind seeded with `--memories`
memories (common.seed_memories), embeddings off (the check reads only the full-text index:
a store's vector comes later from the worker). In-process, through
memories.services, rounds alternating with and without the check (without: the check
skipped as a sync of more than CHECK_MAX_ITEMS items skips it), each a new key:

- single store: memory_store of one new memory;
- sync of 100: memory_upsert_many of 100 new memories.

Then, once each, GET /memory/duplicates' and GET /memory/contradictions' core on the same
mind (duplicate_groups, contradiction_pairs with a 7-day window). Printed: p50/p95 and the
ratio to the baseline measured in the same run, and the CPU flags.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    print(common.cpu())
    with common.BenchDatabase():
        from django.conf import settings

        from memories import services
        from memories.actors import Actor
        from memories.hygiene import contradictions, duplicates

        settings.SYNAPSE_EMBEDDINGS = "off"
        _, mind, _ = common.create_mind("Hygiene")
        common.seed_memories(mind, args.memories)
        actor = Actor(kind="agent", name="bench")
        rng = random.Random(7)
        limit = duplicates.CHECK_MAX_ITEMS
        counter = iter(range(10**9))

        def body() -> dict:
            words = " ".join(rng.choice(common.WORDS) for _ in range(12))
            return {"category": "note", "key": f"bench_{next(counter)}", "content": words}

        figures = {
            name: common.Figure(name)
            for name in ("single, check", "single, baseline", "sync 100, check", "sync 100, base")
        }
        for _ in range(args.rounds):
            for checked in (True, False):
                duplicates.CHECK_MAX_ITEMS = limit if checked else 0
                item = body()
                start = time.perf_counter()
                services.memory_store(mind=mind, actor=actor, body=item)
                figures["single, check" if checked else "single, baseline"].timings.append(
                    time.perf_counter() - start
                )
        for _ in range(max(args.rounds // 10, 5)):
            for checked in (True, False):
                duplicates.CHECK_MAX_ITEMS = limit if checked else 0
                items = [body() for _ in range(100)]
                start = time.perf_counter()
                services.memory_upsert_many(mind=mind, actor=actor, items=items)
                figures["sync 100, check" if checked else "sync 100, base"].timings.append(
                    time.perf_counter() - start
                )
        duplicates.CHECK_MAX_ITEMS = limit
        print(f"\nmind of {args.memories:,} memories, embeddings off")
        print(
            common.format_table(
                [figures["single, check"], figures["single, baseline"]],
                baseline=figures["single, baseline"],
            )
        )
        print(
            common.format_table(
                [figures["sync 100, check"], figures["sync 100, base"]],
                baseline=figures["sync 100, base"],
            )
        )
        start = time.perf_counter()
        groups = duplicates.duplicate_groups(mind=mind)
        print(f"\nduplicate_groups: {time.perf_counter() - start:.2f} s, {len(groups)} groups")
        start = time.perf_counter()
        found = contradictions.contradiction_pairs(mind=mind, within=timedelta(days=7))
        print(f"contradiction_pairs (7d): {time.perf_counter() - start:.2f} s, {len(found)} pairs")


if __name__ == "__main__":
    main()
