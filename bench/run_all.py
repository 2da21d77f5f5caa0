"""Every benchmark in one run, one table: each figure beside its floor and its target.

    make bench                                   # or: .venv/bin/python bench/run_all.py
    .venv/bin/python bench/run_all.py --quick    # fewer requests and memories, a smoke run

What it does, on one fresh temporary SQLite database (bench/common.py) and one gunicorn
started the way `make run` starts it (gunicorn.conf.py, WEB_CONCURRENCY=2 workers), on
127.0.0.1:8790:

1. seeds 100,000 memories as bench/bench_search.py does: the measured mind (10,000, with
   the planted rare words) and nine other minds of 10,000;
2. engine floors, in-process with the sqlite3 module on the same file: the bare FTS5 query
   of each search (bench_search's floor: the smaller of the mind-scoped and the plain
   expression), the raw commit rate (bench_sync.raw_sqlite_rate with one row per commit)
   and the raw insert rate into a similar table without the search index (one commit per
   1,000 rows); and a copy of this database for the bulk load's floor (step 7);
3. the framework floor: GET /health p50 (one client) and requests/s (4 clients);
4. search (bench_search.QUERIES: rare, common, multi-word …) p50/p95, sampled in the same
   rounds as its engine floor and /health, ratio = p50 / (engine + framework floor);
5. recall of the 10,000-memory mind, full text and budget=2000, p50;
6. concurrent single writes: 4 writers POST /memory with new keys to a fresh mind, in three
   bursts, each right after a burst of GET /health with as many connections (the floor the
   writes are compared with, measured under the same load); writes/s, p95, errors, and the
   mind's count afterwards (nothing lost);
7. bulk load: new memories through POST /memory/sync in batches of 1,000
   (bench_sync.build_memories / send_all), to a fresh mind, count checked; in three
   bursts, each right after a burst of its floor: the same memories inserted raw
   (bench_sync.RawSQLite, one commit per 1,000 rows) into memories_memory of the copy, its
   indexes and search trigger at 100,000 memories;
8. peak resident memory (VmHWM) of each gunicorn worker, read from /proc at the end.

Takes 1½ to 3½ minutes on 2 cores, depending on load. Loopback only, bounded loops, nothing
asserted: the last column says whether each target is met. The latest table lives in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_search, bench_sync, common

PORT = 8790
WORKERS = 2  # gunicorn.conf.py's default, as `make run` starts it
WRITERS = 4
BULK_BURSTS = 3


@dataclass
class Row:
    figure: str
    value: str
    floor: str = ""
    ratio: str = ""
    target: str = ""
    met: bool | None = None


def ms(timings: list[float], pct: float = 50) -> float:
    return common.percentile(timings, pct) * 1000


def concurrently(clients: int, work) -> tuple[float, list]:
    """Run work(i) in `clients` threads; (wall seconds, [each result])."""
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(work, range(clients)))
    return time.perf_counter() - started, results


def health_rate(server: common.Server, *, clients: int, requests: int) -> float:
    """GET /health answers per second with `clients` keep-alive connections at once."""

    def work(_):
        client = server.client()
        for _ in range(requests):
            bench_search.check(client.get("/health"))

    seconds, _ = concurrently(clients, work)
    return clients * requests / seconds


def concurrent_writes(
    server: common.Server, key: str, *, writers: int, each: int, prefix: str = "note_w"
) -> dict:
    """`writers` connections each POST `each` new memories; latencies, errors, wall time."""

    def work(w):
        client = server.client(token=key)
        timings, errors = [], 0
        for i in range(each):
            reply = client.post(
                "/memory",
                json={
                    "category": "note",
                    "key": f"{prefix}{w}_{i:06d}",
                    "content": f"Writer {w}, note {i}: the user prefers short answers.",
                    "tags": ["bench", f"writer-{w}"],
                },
            )
            if reply.status != 201:
                errors += 1
            timings.append(reply.seconds)
        return timings, errors

    seconds, results = concurrently(writers, work)
    timings = [t for ts, _ in results for t in ts]
    return {
        "seconds": seconds,
        "timings": timings,
        "errors": sum(e for _, e in results),
        "rate": len(timings) / seconds,
    }


WRITE_BURSTS = 3


def writes_beside_health(server: common.Server, key: str, *, each: int) -> dict:
    """concurrent_writes in WRITE_BURSTS bursts, each after a burst of /health requests with
    as many connections; the writes' figures summed over the bursts, plus `health_rate`,
    the /health rate over its bursts."""
    per_burst = max(1, each // WRITE_BURSTS)
    health_seconds, health_requests = 0.0, 0
    bursts = []
    for burst in range(WRITE_BURSTS):
        started = time.perf_counter()
        health_rate(server, clients=WRITERS, requests=per_burst)
        health_seconds += time.perf_counter() - started
        health_requests += WRITERS * per_burst
        bursts.append(
            concurrent_writes(
                server, key, writers=WRITERS, each=per_burst, prefix=f"note_w{burst}_"
            )
        )
    seconds = sum(b["seconds"] for b in bursts)
    timings = [t for b in bursts for t in b["timings"]]
    return {
        "seconds": seconds,
        "timings": timings,
        "errors": sum(b["errors"] for b in bursts),
        "rate": len(timings) / seconds,
        "sent": len(timings),
        "health_rate": health_requests / health_seconds,
    }


def worker_peak_rss_mb(server: common.Server) -> list[float]:
    """VmHWM (peak resident set) of each gunicorn worker, in MB."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    peaks = []
    for child in children:
        for line in Path(f"/proc/{child}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return peaks


def machine(load_at_start: float) -> str:
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return (
        f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
        f"{mem_kb / 1024 / 1024:.1f} GiB RAM, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {platform.platform()}; load average "
        f"{load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (other work "
        "on the machine shows here)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: far fewer samples")
    parser.add_argument("--port", type=int, default=PORT, help="8790-8799")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    quick = args.quick
    mind_size = 1000 if quick else bench_search.MIND_SIZE
    other_minds = 1 if quick else bench_search.OTHER_MINDS
    rounds = 20 if quick else 100
    recall_requests = 10 if quick else 60
    write_each = 21 if quick else 150
    bulk_count = 2000 if quick else 30_000
    started_all = time.perf_counter()
    load_at_start = os.getloadavg()[0]

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started_all:6.1f}s] {message}", file=sys.stderr, flush=True)

    with common.BenchDatabase() as db, contextlib.ExitStack() as stack:
        # 1. Seed as bench_search does.
        _, mind, key = common.create_mind("Measured")
        common.seed_memories(mind, mind_size, seed=1, content=bench_search.target_content)
        for n in range(other_minds):
            _, other, _ = common.create_mind(f"Other {n}")
            common.seed_memories(other, mind_size, seed=100 + n, content=bench_search.other_content)
        db.settle()
        total_seeded = mind_size * (other_minds + 1)
        say(f"seeded {total_seeded:,} memories ({mind_size:,} in the measured mind)")
        gc.collect()
        gc.freeze()

        # 2. Engine floors, in-process.
        bulk_items = bench_sync.build_memories(bulk_count)
        raw_bulk = bench_sync.raw_sqlite_rate(bulk_items[:20_000], batch=1000)
        raw_commit = bench_sync.raw_sqlite_rate(bulk_items[:2000], batch=1)
        say(f"raw SQLite: {raw_bulk:,.0f} inserts/s in batches, {raw_commit:,.0f} commits/s")
        # The bulk load's floor: the same inserts into memories_memory of a copy of this
        # database (its indexes and search trigger at 100,000 memories), in bursts beside it.
        raw_ours = stack.enter_context(bench_sync.RawSQLite(schema_copy=db.path, batch=1000))
        raw = sqlite3.connect(db.path)
        raw.execute("PRAGMA cache_size=-20000")
        _, _, write_key = common.create_mind("Writers")
        _, _, bulk_key = common.create_mind("Bulk")
        from django.db import connections

        connections.close_all()

        with common.Server(db, port=args.port, workers=WORKERS) as server:
            client = server.client(token=key)
            anonymous = server.client()

            # 3. Framework floor.
            health = common.measure(lambda: anonymous.get("/health"), requests=rounds * 3)
            health_rps = health_rate(server, clients=WRITERS, requests=rounds * 3)
            say(f"/health p50 {ms(health):.2f} ms, {health_rps:,.0f} requests/s")

            # 4. Search, interleaved with its floors.
            searches = []
            for label, q in bench_search.QUERIES:
                path = "/memory/search?" + urlencode({"q": q, "limit": 20})
                total = bench_search.check(client.get(path)).json()["total"]
                samples = bench_search.interleaved(
                    {
                        "http": lambda p=path: bench_search.check(client.get(p)),
                        "health": lambda: bench_search.check(anonymous.get("/health")),
                        **bench_search.sqlite_floor_calls(raw, mind_id=mind.pk, q=q),
                    },
                    rounds=rounds,
                )
                searches.append((label, q, total, samples))
            say("search measured")

            # 5. Recall.
            recall_full = common.measure(
                lambda: client.get("/memory/recall"), requests=recall_requests, warmup=3
            )
            recall_budget = common.measure(
                lambda: client.get("/memory/recall?budget=2000"),
                requests=recall_requests * 3,
                warmup=3,
            )
            say(f"recall p50 full {ms(recall_full):.1f} ms, budget {ms(recall_budget):.1f} ms")

            # 6. Concurrent single writes, in bursts that alternate with bursts of /health at
            # the same concurrency: the floor is measured under the same load as the writes.
            writes = writes_beside_health(server, write_key, each=write_each)
            stored = server.client(token=write_key).get("/memory/stats").json()["total"]
            lost = writes["sent"] - stored
            say(f"writes {writes['rate']:,.0f}/s, {writes['errors']} errors, {lost} lost")

            # 7. Bulk load, in three bursts, each right after a burst of its floor (the same
            # memories inserted raw into the copy): both see the same load.
            bulk_seconds = raw_seconds = 0.0
            step = max(1000, len(bulk_items) // BULK_BURSTS // 1000 * 1000)  # whole calls
            for start in range(0, len(bulk_items), step):
                burst = bulk_items[start : start + step]
                raw_seconds += raw_ours.insert(burst)
                bodies = [
                    json.dumps({"memories": burst[i : i + 1000]}).encode()
                    for i in range(0, len(burst), 1000)
                ]
                bulk_seconds += bench_sync.send_all(
                    server, bulk_key, bodies, clients=1, expect="created"
                )
            bulk_total = server.client(token=bulk_key).get("/memory/stats").json()["total"]
            bulk_rate = bulk_count / bulk_seconds
            raw_ours_rate = bulk_count / raw_seconds
            say(
                f"bulk load {bulk_rate:,.0f} memories/s, {bulk_total:,} stored; "
                f"raw inserts beside it {raw_ours_rate:,.0f}/s"
            )

            # 8. Peak memory per worker.
            peaks = worker_peak_rss_mb(server)
        raw.close()

    rows = table_rows(
        health=health,
        health_rps=health_rps,
        searches=searches,
        recall_full=recall_full,
        recall_budget=recall_budget,
        writes=writes,
        lost=lost,
        raw_commit=raw_commit,
        bulk_rate=bulk_rate,
        bulk_count=bulk_count,
        bulk_total=bulk_total,
        raw_bulk=raw_bulk,
        raw_ours=raw_ours_rate,
        peaks=peaks,
        total_seeded=total_seeded,
        mind_size=mind_size,
    )
    print(f"\nSynapse benchmarks, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(machine(load_at_start))
    print(
        f"gunicorn as `make run` starts it ({WORKERS} workers), a fresh SQLite database of "
        f"{total_seeded:,} memories (+ the writers' and the bulk load's minds)\n"
    )
    print(format_rows(rows))
    print(f"\nwhole run {time.perf_counter() - started_all:.0f}s")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=1))
    return 0


def table_rows(**f) -> list[Row]:
    health_p50 = ms(f["health"])
    rows = [
        Row(
            "bulk load, POST /memory/sync (1,000/call)",
            f"{f['bulk_rate']:,.0f} memories/s",
            f"raw insert, same table {f['raw_ours']:,.0f}/s",
            f"{f['bulk_rate'] / f['raw_ours']:.2f}x",
            ">= 5,000/s, none lost",
            f["bulk_rate"] >= 5000 and f["bulk_total"] == f["bulk_count"],
        ),
        Row(
            "  raw insert without the search index (a similar table)",
            "",
            f"{f['raw_bulk']:,.0f}/s",
            f"{f['bulk_rate'] / f['raw_bulk']:.2f}x",
        ),
    ]
    for label, q, total, t in f["searches"]:
        engine = min(ms(t["fts_mind"]), ms(t["fts_all"]))
        floor = engine + ms(t["health"])
        ratio = ms(t["http"]) / floor
        rows.append(
            Row(
                f"search {label} ({q[:22]}, {total} hits)",
                f"{ms(t['http']):.2f} / {ms(t['http'], 95):.2f} ms",
                f"FTS5 {engine:.2f} + /health {ms(t['health']):.2f} ms",
                f"{ratio:.2f}x",
                "p50 <= 2x floor",
                ratio <= 2,
            )
        )
    full, budget = ms(f["recall_full"]), ms(f["recall_budget"])
    size = f["mind_size"]
    rows += [
        Row(
            f"recall {size:,}-memory mind, full text",
            f"{full:.1f} / {ms(f['recall_full'], 95):.1f} ms",
            f"/health {health_p50:.2f} ms",
            f"{full / health_p50:.0f}x",
            "p50 <= 100 ms",
            full <= 100,
        ),
        Row(
            "recall, budget=2000",
            f"{budget:.1f} / {ms(f['recall_budget'], 95):.1f} ms",
            f"/health {health_p50:.2f} ms",
            f"{budget / health_p50:.1f}x",
            "p50 <= 30 ms",
            budget <= 30,
        ),
    ]
    w = f["writes"]
    rows += [
        Row(
            f"{WRITERS} writers, POST /memory",
            f"{w['rate']:,.0f}/s, p95 {ms(w['timings'], 95):.1f} ms",
            f"/health {w['health_rate']:,.0f}/s beside",
            f"{w['rate'] / w['health_rate']:.2f}x",
            ">= 0.40x, 0 errors, 0 lost",
            w["rate"] >= 0.4 * w["health_rate"] and w["errors"] == 0 and f["lost"] == 0,
        ),
        Row(
            "  errors / lost",
            f"{w['errors']} / {f['lost']} of {len(w['timings'])}",
            f"raw SQLite {f['raw_commit']:,.0f} commits/s",
            f"{w['rate'] / f['raw_commit']:.2f}x",
        ),
        Row(
            f"GET /health (framework floor, {WRITERS} clients for /s)",
            f"{health_p50:.2f} ms, {f['health_rps']:,.0f}/s",
        ),
        Row(
            "raw FTS5 query (engine floor, min per search)",
            ", ".join(f"{min(ms(t['fts_mind']), ms(t['fts_all'])):.2f}" for *_, t in f["searches"])
            + " ms",
        ),
        Row("raw SQLite commit (engine floor, 1 row/commit)", f"{f['raw_commit']:,.0f}/s"),
        Row(
            f"peak RSS per worker ({f['total_seeded']:,}+ memories)",
            " / ".join(f"{p:.0f}" for p in f["peaks"]) + " MB",
            "",
            "",
            "<= 150 MB",
            max(f["peaks"]) <= 150,
        ),
    ]
    return rows


def format_rows(rows: list[Row]) -> str:
    head = ("figure", "p50 / p95 or rate", "floor", "ratio", "target", "met")
    met = {True: "yes", False: "NO", None: ""}
    cells = [(r.figure, r.value, r.floor, r.ratio, r.target, met[r.met]) for r in rows]
    widths = [max(len(row[i]) for row in [head, *cells]) for i in range(len(head))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("-" * len(lines[0]))
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
