"""Benchmark: the background worker, as `make run` starts it beside gunicorn.

Run it from the repository root:

    .venv/bin/python bench/bench_worker.py                    # 30 single stores, 2,000 in bulk
    .venv/bin/python bench/bench_worker.py --stores 60 --bulk 5000 --database postgres

What it does: a fresh database (bench/common.py), one mind, gunicorn (gunicorn.conf.py,
2 workers) and one `manage.py run_huey` on it, each with the default embeddings
(SYNAPSE_EMBEDDINGS=local unless the environment says otherwise). Figures:

- time from a store to its vector, at idle: `--stores` single `POST /memory`, one every
  `--gap` seconds; from sending the store until its vector is in the database (polled every
  5 ms), p50/p95/max;
- worker embedding rate: `--bulk` memories sent with `POST /memory/sync` (1,000 a call),
  then the time until the last of them has its vector: memories/s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=30)
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between the stores")
    parser.add_argument("--bulk", type=int, default=2000)
    parser.add_argument("--port", type=int, default=8712)
    parser.add_argument("--database", choices=common.DATABASES, default="sqlite")
    args = parser.parse_args()

    with common.BenchDatabase(database=args.database) as db:
        _, mind, key = common.create_mind("Worker bench")
        with common.Server(db, port=args.port) as server:
            worker = start_worker(db)
            try:
                client = server.client(token=key)
                common.wait_for_first_vector(worker, mind, db.dir / "worker.log")
                latencies = store_to_vector(client, args.stores, args.gap)
                rate = embedding_rate(client, mind, args.bulk)
            finally:
                worker.terminate()
                worker.wait(timeout=30)
    latencies.sort()
    p95 = latencies[max(0, int(len(latencies) * 0.95) - 1)]
    print(f"\n{'figure':<44} {'value':>30}")
    print("-" * 75)
    print(
        f"{'store -> vector at idle (' + str(len(latencies)) + ' stores)':<44} "
        f"{statistics.median(latencies) * 1000:>9.0f} / {p95 * 1000:.0f} / "
        f"{latencies[-1] * 1000:.0f} ms p50/p95/max"
    )
    label = f"worker embedding rate ({args.bulk:,} memories)"
    print(f"{label:<44} {rate:>18,.0f} memories/s")


def start_worker(db: common.BenchDatabase) -> subprocess.Popen:
    env = {**os.environ, **db.env, "LOG_LEVEL": "WARNING"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = open(db.dir / "worker.log", "wb")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [str(common.VENV_BIN / "python"), "manage.py", "run_huey"],
        cwd=common.REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_for_vectors(memory_ids: list[str], timeout: float = 600) -> float:
    from memories.models import MemoryVector

    deadline = time.monotonic() + timeout
    while MemoryVector.objects.filter(memory_id__in=memory_ids).count() < len(memory_ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(memory_ids)} vectors not stored within {timeout}s")
        time.sleep(0.005)
    return time.monotonic()


def store_to_vector(client, stores: int, gap: float) -> list[float]:
    latencies = []
    for i in range(stores):
        time.sleep(gap)
        started = time.monotonic()
        answer = client.post(
            "/memory",
            json={"category": "note", "key": f"idle_{i}", "content": f"Idle store number {i}."},
        )
        memory_id = answer.json()["id"]
        latencies.append(wait_for_vectors([memory_id], timeout=60) - started)
    return latencies


def embedding_rate(client, mind, bulk: int) -> float:
    ids = []
    started = time.monotonic()
    for start in range(0, bulk, 1000):
        items = [
            {
                "category": "fact",
                "key": f"bulk_{i}",
                "content": f"Note {i}: the team reviews the roadmap and the budget of project {i}.",
                "tags": ["bench"],
            }
            for i in range(start, min(start + 1000, bulk))
        ]
        answer = client.post("/memory/sync", json={"memories": items}).json()
        ids += [result["id"] for result in answer["results"]]
    return bulk / (wait_for_vectors(ids) - started)


if __name__ == "__main__":
    main()
