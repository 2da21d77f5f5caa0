"""Benchmark: webhook deliveries, and what registered webhooks cost the writes.

    .venv/bin/python bench/bench_webhooks.py            # standalone, its own database
    .venv/bin/python bench/bench_webhooks.py --quick

`make bench` (bench/run_all.py) runs `measure` beside its own server and adds the rows to its
table. Receivers are threads of this process on 127.0.0.1 (tests/webhook_receiver.py), so
the server runs with SYNAPSE_WEBHOOKS_ALLOW_PRIVATE=true. Figures:

- deliveries per second to one local receiver, one worker (`manage.py run_huey` with
  embeddings off, so it only delivers): `events` memories stored in bulk while the worker is
  stopped, then the time from the first delivery to the last once it starts; beside it, the
  same receiver's rate for plain POSTs of the same bodies from one thread of this process
  (no database, no signature: the ceiling of one sender);
- change to delivery at idle: single `POST /memory`, one every `gap` seconds, from sending
  the store until the receiver has its event, p50/p95;
- the writes with three webhooks registered on the mind, one pointing at a receiver that
  never answers, the worker delivering meanwhile: 4 writers (`run_all.writes_beside_health`)
  and the bulk load, each beside the same writes to a mind without webhooks.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["SYNAPSE_WEBHOOKS_ALLOW_PRIVATE"] = "true"  # the receivers run on 127.0.0.1

from bench import common

SECRET = "whsec_" + "YmVuY2gtd2ViaG9vay1zZWNyZXQ="


def start_worker(db: common.BenchDatabase):
    """`manage.py run_huey` on the database, embeddings off: it only delivers webhooks."""
    from bench import bench_worker

    previous = os.environ.get("SYNAPSE_EMBEDDINGS")
    os.environ["SYNAPSE_EMBEDDINGS"] = "off"
    try:
        return bench_worker.start_worker(db)
    finally:
        if previous is None:
            os.environ.pop("SYNAPSE_EMBEDDINGS", None)
        else:
            os.environ["SYNAPSE_EMBEDDINGS"] = previous


def stop(worker) -> None:
    worker.terminate()
    worker.wait(timeout=30)


def hook(mind, url: str) -> None:
    from webhooks.services import webhook_create

    webhook_create(mind=mind, body={"url": url, "secret": SECRET})


def wait_for(receiver, count: int, timeout: float = 300) -> float:
    receiver.wait_for(count, timeout=timeout)
    return time.monotonic()


def plain_post_rate(url: str, bodies: list[bytes]) -> float:
    """POSTs per second of these bodies from one thread, one connection each (as deliveries
    are sent), with no database and no signature."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    started = time.perf_counter()
    for body in bodies:
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("POST", "/hook", body=body, headers={"Content-Type": "application/json"})
        conn.getresponse().read()
        conn.close()
    return len(bodies) / (time.perf_counter() - started)


def measure(server, db, *, quick: bool, say=print) -> dict:
    """Every figure of this benchmark, on a running server over `db`."""
    from django.conf import settings

    from bench import bench_sync, run_all
    from memories.models import Memory
    from tests.webhook_receiver import receiving

    # This process registers the webhooks; the server and the worker read it from the env.
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True

    events = 300 if quick else 2000
    idle_stores = 5 if quick else 20
    write_each = 21 if quick else 150
    bulk_count = 2000 if quick else 10_000
    figures: dict = {"events": events}
    with receiving() as fast, receiving() as other, receiving(default="hang") as dead:
        # Deliveries per second: events recorded with the worker stopped, then sent.
        _, rate_mind, rate_key = common.create_mind("Webhook rate")
        hook(rate_mind, fast.url)
        client = server.client(token=rate_key)
        for start in range(0, events, 1000):
            items = [
                {"category": "note", "key": f"event_{i}", "content": f"Event number {i}."}
                for i in range(start, min(start + 1000, events))
            ]
            client.post("/memory/sync", json={"memories": items})
        worker = start_worker(db)
        try:
            # From the first delivery to the last: the worker's start is not delivery time.
            last = wait_for(fast, events)
            figures["rate"] = (events - 1) / (last - fast.received[0].at)
            bodies = [r.body for r in fast.received[:events]]
            figures["plain_rate"] = plain_post_rate(fast.url, bodies[: min(events, 1000)])
            say(f"webhooks: {figures['rate']:,.0f}/s, plain POSTs {figures['plain_rate']:,.0f}/s")

            # Change to delivery at idle.
            latencies = []
            for i in range(idle_stores):
                time.sleep(1.0)
                seen = len(fast.received)
                started = time.monotonic()
                client.post(
                    "/memory",
                    json={"category": "note", "key": f"idle_{i}", "content": f"Idle {i}."},
                )
                latencies.append(wait_for(fast, seen + 1, timeout=60) - started)
            figures["idle"] = latencies
            say(f"webhooks: change -> delivery p95 {run_all.ms(latencies, 95):.0f} ms")

            # The writes, with three webhooks (one dead) and the worker delivering.
            _, _, plain_key = common.create_mind("Writers, no webhooks")
            _, hooked_writers, hooked_key = common.create_mind("Writers, 3 webhooks")
            for url in (fast.url, other.url, dead.url):
                hook(hooked_writers, url)
            plain = run_all.writes_beside_health(server, plain_key, each=write_each)
            hooked = run_all.writes_beside_health(server, hooked_key, each=write_each)
            hooked["lost"] = hooked["sent"] - Memory.objects.filter(mind=hooked_writers).count()
            figures["writes"], figures["writes_hooked"] = plain, hooked
            say(f"webhooks: 4 writers {hooked['rate']:,.0f}/s with, {plain['rate']:,.0f}/s without")

            _, _, plain_bulk_key = common.create_mind("Bulk, no webhooks")
            _, hooked_bulk, hooked_bulk_key = common.create_mind("Bulk, 3 webhooks")
            for url in (fast.url, other.url, dead.url):
                hook(hooked_bulk, url)
            items = bench_sync.build_memories(bulk_count)
            bodies = [
                json.dumps({"memories": items[i : i + 1000]}).encode()
                for i in range(0, len(items), 1000)
            ]
            plain_seconds = hooked_seconds = 0.0
            half = len(bodies) // 2 or 1
            # Alternating halves: both see the same load from the deliveries under way.
            for part in (bodies[:half], bodies[half:]):
                if not part:
                    continue
                plain_seconds += bench_sync.send_all(
                    server, plain_bulk_key, part, clients=1, expect="created"
                )
                hooked_seconds += bench_sync.send_all(
                    server, hooked_bulk_key, part, clients=1, expect="created"
                )
            figures["bulk"] = bulk_count / plain_seconds
            figures["bulk_hooked"] = bulk_count / hooked_seconds
            figures["bulk_hooked_stored"] = Memory.objects.filter(mind=hooked_bulk).count()
            figures["bulk_count"] = bulk_count
            say(
                f"webhooks: bulk {figures['bulk_hooked']:,.0f}/s with, "
                f"{figures['bulk']:,.0f}/s without"
            )
        finally:
            stop(worker)
            dead.release()
    return figures


def rows(f: dict, Row) -> list:
    """The figures as run_all's table rows."""
    from bench import run_all

    ms = run_all.ms
    w, h = f["writes"], f["writes_hooked"]
    return [
        Row(
            f"webhook deliveries, 1 worker, 1 local receiver ({f['events']:,} events)",
            f"{f['rate']:,.0f} events/s",
            f"plain POSTs, 1 thread {f['plain_rate']:,.0f}/s",
            f"{f['rate'] / f['plain_rate']:.2f}x",
        ),
        Row(
            f"change -> webhook delivery at idle ({len(f['idle'])} stores, 1 s apart)",
            f"{ms(f['idle']):.0f} / {ms(f['idle'], 95):.0f} ms",
            "",
            "",
            "p95 <= 2 s",
            ms(f["idle"], 95) <= 2000,
        ),
        Row(
            f"{run_all.WRITERS} writers, 3 webhooks (1 never answers)",
            f"{h['rate']:,.0f}/s, p95 {ms(h['timings'], 95):.1f} ms",
            f"/health {h['health_rate']:,.0f}/s; no webhooks {w['rate']:,.0f}/s",
            f"{h['rate'] / h['health_rate']:.2f}x; {h['rate'] / w['rate']:.2f}x",
            ">= 0.40x, 0 errors, 0 lost",
            h["rate"] >= 0.4 * h["health_rate"] and h["errors"] == 0 and h["lost"] == 0,
        ),
        Row(
            "bulk load, 3 webhooks (1 never answers)",
            f"{f['bulk_hooked']:,.0f} memories/s",
            f"no webhooks {f['bulk']:,.0f}/s",
            f"{f['bulk_hooked'] / f['bulk']:.2f}x",
            ">= 5,000/s, none lost",
            f["bulk_hooked"] >= 5000 and f["bulk_hooked_stored"] == f["bulk_count"],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--port", type=int, default=8713)
    args = parser.parse_args()
    from bench import run_all

    with common.BenchDatabase() as db:
        from django.db import connections

        connections.close_all()
        with common.Server(db, port=args.port) as server:
            figures = measure(server, db, quick=args.quick)
    print(run_all.machine(os.getloadavg()[0]))
    print(run_all.format_rows(rows(figures, run_all.Row)))


if __name__ == "__main__":
    main()
