"""Benchmark: a quiet mind's store → vector while another mind floods the embedding queue.

Run it from the repository root:

    .venv/bin/python bench/bench_queue.py                 # 3,000 long memories, 20 stores
    .venv/bin/python bench/bench_queue.py --flood 1000 --stores 10 --database postgres

What it does: a fresh database (bench/common.py), gunicorn as `make run` starts it, and an
embedding worker in a process of its own (the default model, SYNAPSE_EMBEDDINGS=local):
`outbox.embed_pending` run again as soon as it returns, the queue looked at every 50 ms
when empty, once with the minds served in turn (as `manage.py run_huey` runs it) and once
oldest first (the order before: the baseline). In each round one mind sends `--flood` long
memories (about 1,500 characters: the 256 tokens the model reads) with `POST /memory/sync`,
500 a call, and right after, a quiet mind stores `--stores` single memories `--gap`
seconds apart, on that schedule whatever the vectors do; each is timed from sending it
until its vector is in the database (polled every 5 ms). Target: p95 ≤ 2 s with the minds
in turn. The worker's queue is emptied between rounds.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

ORDERS = ("turns", "oldest")
# Memories per sync call: 500 long ones stay under the default 1 MiB body.
SYNC_CALL = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=3000, help="long memories of the flood")
    parser.add_argument("--stores", type=int, default=20, help="single stores of the quiet mind")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between the stores")
    parser.add_argument("--port", type=int, default=8713)
    parser.add_argument("--database", choices=common.DATABASES, default="sqlite")
    parser.add_argument("--worker", choices=ORDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return run_worker(fair=args.worker == "turns")

    os.environ.setdefault("SYNAPSE_EMBEDDINGS", "local")
    print(machine())
    load_at_start = os.getloadavg()[0]
    results = {}
    with (
        common.BenchDatabase(database=args.database) as db,
        common.Server(db, port=args.port) as server,
    ):
        for order in ORDERS:
            results[order] = one_round(db, server, order, args)
            print(f"[{order}] p95 {p95(results[order]):.2f} s", file=sys.stderr, flush=True)
    print(
        f"\n{args.database}; load average {load_at_start:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end\n"
    )
    print(f"{'figure':<78} {'p50 / p95 / max':>22}  target      met")
    print("-" * 118)
    for order, label in (("turns", "minds in turn"), ("oldest", "oldest first (before)")):
        latencies = results[order]
        figure = (
            f"store -> vector of a quiet mind while another floods ({args.flood:,} long), {label}"
        )
        met = ("yes" if p95(latencies) <= 2 else "NO") if order == "turns" else ""
        target = "p95 <= 2 s" if order == "turns" else "baseline"
        print(
            f"{figure:<78} {statistics.median(latencies):>6.2f} / {p95(latencies):.2f} / "
            f"{max(latencies):.2f} s  {target:<11} {met}"
        )


def p95(values: list[float]) -> float:
    return common.percentile(values, 95)


def machine() -> str:
    return f"{common.cpu()}; Python {platform.python_version()}"


def one_round(db: common.BenchDatabase, server: common.Server, order: str, args) -> list[float]:
    from memories.models import EmbeddingJob

    _, _, flood_key = common.create_mind(f"Flood ({order})")
    _, quiet, quiet_key = common.create_mind(f"Quiet ({order})")
    worker = start_worker(db, order)
    try:
        common.wait_for_first_vector(worker, quiet, db.dir / f"worker-{order}.log")
        failed: list[str] = []
        flood = threading.Thread(
            target=send_flood,
            args=(server.client(token=flood_key), args.flood, failed),
            daemon=True,
        )
        flood.start()
        time.sleep(0.5)  # the flood's first call is in the queue
        latencies = store_to_vector(server.client(token=quiet_key), args.stores, args.gap)
        flood.join()
        if failed:
            raise RuntimeError(failed[0])
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        EmbeddingJob.objects.all().delete()
    return latencies


def run_worker(*, fair: bool) -> None:
    """The worker's loop, in this process: embed what is due, look again every 50 ms."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synapse_site.settings")
    django.setup()
    from django.db import close_old_connections

    from memories.embeddings import outbox

    while True:
        if not outbox.embed_pending(fair=fair):
            time.sleep(0.05)
        close_old_connections()


def start_worker(db: common.BenchDatabase, order: str) -> subprocess.Popen:
    env = {**os.environ, **db.env, "LOG_LEVEL": "WARNING"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    log = open(db.dir / f"worker-{order}.log", "wb")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen(
        [str(common.VENV_BIN / "python"), "bench/bench_queue.py", "--worker", order],
        cwd=common.REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def send_flood(client, count: int, failed: list[str]) -> None:
    rng = random.Random(7)
    for start in range(0, count, SYNC_CALL):
        items = [
            {
                "category": "fact",
                "key": f"long_{i}",
                "content": " ".join(common.sentence(rng, 20) for _ in range(12))[:1500],
            }
            for i in range(start, min(start + SYNC_CALL, count))
        ]
        answer = client.post("/memory/sync", json={"memories": items})
        if answer.status >= 300:
            failed.append(f"sync answered {answer.status}: {answer.body[:200]!r}")
            return


def store_to_vector(client, stores: int, gap: float) -> list[float]:
    """Send the stores on their schedule, whatever the vectors do; each from its sending
    until its vector is in the database."""
    from memories.models import MemoryVector

    sent: dict[str, float] = {}
    latencies: list[float] = []
    started = time.monotonic()
    deadline = started + stores * gap + 900
    while len(latencies) < stores:
        if len(sent) < stores and time.monotonic() >= started + len(sent) * gap:
            at = time.monotonic()
            i = len(sent)
            reply = client.post(
                "/memory", json={"category": "note", "key": f"quiet_{i}", "content": f"Quiet {i}."}
            )
            sent[reply.json()["id"]] = at
        waiting = [m for m, at in sent.items() if at >= 0]
        for memory_id in MemoryVector.objects.filter(memory_id__in=waiting).values_list(
            "memory_id", flat=True
        ):
            latencies.append(time.monotonic() - sent[memory_id])
            sent[memory_id] = -1.0
        if time.monotonic() > deadline:
            raise RuntimeError("quiet stores got no vector within 900 s")
        time.sleep(0.005)
    return latencies


if __name__ == "__main__":
    main()
