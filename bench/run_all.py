"""Every benchmark in one run, one table: each figure beside its floor and its target.

    make bench                                   # or: .venv/bin/python bench/run_all.py
    .venv/bin/python bench/run_all.py --quick    # fewer requests and memories, a smoke run

What it does, on one fresh temporary SQLite database (bench/common.py) and one gunicorn
started the way `make run` starts it (gunicorn.conf.py, WEB_CONCURRENCY=2 workers), on
127.0.0.1:8790:

1. seeds 100,000 memories as bench/bench_search.py does: the measured mind (10,000, with
   the planted rare words) and nine other minds of 10,000; gives the measured mind's
   memories their vectors through the embedding outbox, in this process, as the worker
   does (queue_missing, embed_pending: one thread, the default model), timed: the worker's
   embedding rate, beside the bare model's on the same texts (the other minds get none);
2. engine floors, in-process with the sqlite3 module on the same file: the bare FTS5 query
   of each search (bench_search's floor: the smaller of the mind-scoped and the plain
   expression), the raw commit rate (bench_sync.raw_sqlite_rate with one row per commit)
   and the raw insert rate into a similar table without the search index (one commit per
   1,000 rows); and a copy of this database for the bulk load's floor (step 7);
3. the framework floor: GET /health p50 (one client) and requests/s (4 clients);
4. keyword search (bench_search.QUERIES: rare, common, multi-word …) p50/p95, sampled in
   the same rounds as its engine floor and /health, ratio = p50 / (engine + framework floor);
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
8. peak resident memory (VmHWM) and PSS of each gunicorn worker, read from /proc, before
   any search by meaning (the model is there already: the master loads it before the fork);
9. hybrid search, the same queries with mode=hybrid (the query's embedding included), each
   round beside the same query with mode=keyword; then the workers' memory again, now with
   the model loaded;
10. time from a store to its vector at idle: `manage.py run_huey` started beside gunicorn
   on this database, single stores one second apart (bench_worker's measure);
11. the dashboard, as its owner signed in through the login form (bench_dashboard): the
   measured mind's memory table, a search (by words and meaning) and its review queue,
   p50/p95 in the same rounds as /health; then "verify all matching" on a mind of 5,000
   unverified memories, one POST, checked afterwards (all verified, one audit row each);
12. webhooks (bench/bench_webhooks.py): deliveries per second to a local receiver with one
   worker, change to delivery at idle, and the writes of steps 6 and 7 again with three
   webhooks on the mind (one never answers), beside the same writes without;
13. pictures (bench/bench_pictures.py): the measured mind's graph (max_nodes=200) and
   timeline by day, over the audit rows its writes would have left (seeded in step 1),
   each beside a plain GET /memory page of the same mind;
14. recall as of a month back (bench/bench_as_of.py): the measured mind and its audit rows
   moved 40 days back, a month of writes through the services (3,000; 300 with --quick),
   then recall with budget=2000 and in full, today and `as_of` 30 days ago.

Everything runs with SYNAPSE_EMBEDDINGS=local, as in production: writes queue their
memories for embedding. Takes 4 to 6 minutes on 2 cores, depending on load. Loopback only,
bounded loops, nothing asserted: the last column says whether each target is met. The latest
table lives in docs/performance.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import secrets
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    bench_as_of,
    bench_dashboard,
    bench_pictures,
    bench_search,
    bench_sync,
    bench_webhooks,
    common,
)

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


def worker_pids(server: common.Server) -> list[str]:
    pid = server.process.pid
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def model_loaded(pid: str) -> bool:
    """Whether this process has onnxruntime mapped (the local model loads it)."""
    return "onnxruntime" in Path(f"/proc/{pid}/maps").read_text()


def worker_memory_mb(server: common.Server) -> list[dict]:
    """Per gunicorn worker: peak and current resident set (VmHWM, VmRSS) and the proportional
    set size (Pss: pages shared with the master and the other workers count by share), MB."""
    figures = []
    for pid in worker_pids(server):
        status = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        pss = next(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
        figures.append(
            {
                "peak": int(status["VmHWM"].split()[0]) / 1024,
                "rss": int(status["VmRSS"].split()[0]) / 1024,
                "pss": pss / 1024,
                "model": model_loaded(pid),
            }
        )
    return figures


def embed_measured_mind(mind_id: str, *, bare_sample: int) -> dict:
    """Vectors for the measured mind through the outbox, as the worker makes them
    (queue_missing, then embed_pending: one thread, the default model), timed; and the bare
    model on the first `bare_sample` of the same texts, in the outbox's batch size."""
    from memories.embeddings import get_embedder, outbox
    from memories.embeddings.text import embedding_text
    from memories.models import Memory

    embedder = get_embedder()
    assert embedder is not None, "SYNAPSE_EMBEDDINGS is off"
    embedder.embed_documents(["warm up"])  # the model's load is not part of either rate
    started = time.perf_counter()
    queued = outbox.queue_missing(model=embedder.model, mind_id=mind_id)
    stored = outbox.embed_pending(embedder=embedder, mind_id=mind_id)
    worker_seconds = time.perf_counter() - started
    memories = Memory.objects.filter(mind_id=mind_id).order_by("pk")[:bare_sample]
    texts = [embedding_text(m) for m in memories]
    started = time.perf_counter()
    for i in range(0, len(texts), outbox.BATCH_SIZE):
        embedder.embed_documents(texts[i : i + outbox.BATCH_SIZE])
    bare_seconds = time.perf_counter() - started
    return {
        "queued": queued,
        "stored": stored,
        "worker_rate": stored / worker_seconds,
        "bare_rate": len(texts) / bare_seconds,
        "bare_count": len(texts),
        "model": embedder.model,
    }


def embed_agent_like_mind(count: int) -> dict:
    """The worker's rate on memories as agents write them: a mind of `count` memories whose
    contents are the search evaluation's (bench/search_eval_data.json: a sentence or two
    each), embedded through the outbox as embed_measured_mind does; and their mean length
    in the model's tokens beside that of the measured mind's texts."""
    from memories.embeddings import get_embedder, outbox

    data = json.loads((Path(__file__).parent / "search_eval_data.json").read_text())
    contents = [memory["content"] for memory in data["memories"]]
    _, mind, _ = common.create_mind("Agent-like")
    common.seed_memories(mind, count, seed=7, content=lambda rng, i: contents[i % len(contents)])
    embedder = get_embedder()
    assert embedder is not None, "SYNAPSE_EMBEDDINGS is off"
    started = time.perf_counter()
    outbox.queue_missing(model=embedder.model, mind_id=mind.pk)
    stored = outbox.embed_pending(embedder=embedder, mind_id=mind.pk)
    rate = stored / (time.perf_counter() - started)
    return {"stored": stored, "rate": rate, "mind_id": mind.pk}


def mean_tokens(mind_id: str, sample: int = 500) -> float:
    """How many of the local model's tokens the mind's embedded texts have, on average (as
    the model reads them: its prefix, <s> and </s> included, cut at its limit)."""
    from memories.embeddings import get_embedder
    from memories.embeddings.text import embedding_text
    from memories.models import Memory

    embedder = get_embedder()
    texts = [embedding_text(m) for m in Memory.objects.filter(mind_id=mind_id)[:sample]]
    return sum(len(embedder.document_tokens(text)) for text in texts) / max(len(texts), 1)


def until_model_in_every_worker(server: common.Server, call, *, limit: int = 200) -> None:
    """Repeat a search by meaning until every worker has served one (its model loaded and
    its mind's vectors cached): the timed rounds then measure neither."""
    for _ in range(limit):
        if all(model_loaded(pid) for pid in worker_pids(server)):
            break
        call()
    for _ in range(10):
        call()


def store_to_vector_at_idle(
    server: common.Server, db: common.BenchDatabase, key: str, *, stores: int, gap: float
) -> list[float]:
    """bench_worker's measure, with `manage.py run_huey` started beside gunicorn on this
    database. A worker starting queues every memory with no vector (here the 90,000 of the
    other minds and the writers' and bulk load's): those jobs are dropped once queued, so the
    stores are timed at idle."""
    from bench import bench_worker
    from memories.models import EmbeddingJob
    from minds.models import Mind

    EmbeddingJob.objects.all().delete()
    worker = bench_worker.start_worker(db)
    try:
        deadline = time.monotonic() + 120
        while not EmbeddingJob.objects.exists():  # its start: queue_missing, one statement
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the worker did not start: see worker.log")
            time.sleep(0.05)
        EmbeddingJob.objects.all().delete()
        common.wait_for_first_vector(worker, Mind.objects.first(), db.dir / "worker.log")
        client = server.client(token=key)
        return bench_worker.store_to_vector(client, stores, gap)
    finally:
        worker.terminate()
        worker.wait(timeout=30)


DASHBOARD_PAGES = (
    "memory table, page 1",
    "search 'deploy', best first",
    "review queue, page 1",
    "review queue, ?page=last",
)


def dashboard_pages(
    server: common.Server, email: str, password: str, mind_id: str, *, rounds: int
) -> dict:
    """bench_dashboard's pages of the measured mind, signed in as its owner, each round
    beside GET /health; the signed-in browser is returned under "browser"."""
    browser = bench_dashboard.Browser(server.host, server.port)
    bench_dashboard.log_in(browser, email, password)
    anonymous = server.client()
    paths = bench_dashboard.dashboard_pages(mind_id)
    calls = {
        name: (lambda p=paths[name]: bench_search.check(browser.get(p))) for name in DASHBOARD_PAGES
    }
    calls["health"] = lambda: bench_search.check(anonymous.get("/health"))
    return {**bench_search.interleaved(calls, rounds=rounds), "browser": browser}


def machine(load_at_start: float) -> str:
    mem_kb = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    return (
        f"{common.cpu()}, "
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
    idle_stores = 5 if quick else 20
    started_all = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    # As in production: every write queues its memories for the embedding worker.
    os.environ["SYNAPSE_EMBEDDINGS"] = "local"

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started_all:6.1f}s] {message}", file=sys.stderr, flush=True)

    with common.BenchDatabase() as db, contextlib.ExitStack() as stack:
        # 1. Seed as bench_search does.
        owner, mind, key = common.create_mind("Measured")
        password = secrets.token_urlsafe(16)  # the dashboard's rows log in as the owner
        owner.set_password(password)
        owner.save()
        common.seed_memories(mind, mind_size, seed=1, content=bench_search.target_content)
        bench_pictures.seed_events(mind)  # the audit trail the timeline reads
        for n in range(other_minds):
            _, other, _ = common.create_mind(f"Other {n}")
            common.seed_memories(other, mind_size, seed=100 + n, content=bench_search.other_content)
        db.settle()
        total_seeded = mind_size * (other_minds + 1)
        say(f"seeded {total_seeded:,} memories ({mind_size:,} in the measured mind)")
        # Vectors for the measured mind only, through the outbox, as the worker makes them.
        embedding = embed_measured_mind(mind.pk, bare_sample=min(mind_size, 2000))
        embedding["tokens"] = mean_tokens(mind.pk)
        agent_like = embed_agent_like_mind(500 if quick else 2000)
        agent_like["tokens"] = mean_tokens(agent_like.pop("mind_id"))
        db.settle()
        say(
            f"embedded {embedding['stored']:,} memories: {embedding['worker_rate']:,.0f}/s "
            f"through the outbox, bare model {embedding['bare_rate']:,.0f}/s"
        )
        # "Verify all matching" acts on a mind of its own: 5,000 unverified memories.
        from minds.services import mind_create

        to_verify, _ = mind_create(owner=owner, name="To verify")
        common.seed_memories(
            to_verify, bench_dashboard.VERIFY_SIZE, seed=7, verified_share=0, expired_share=0
        )
        bench_dashboard.collect_static()
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
        _, writers, write_key = common.create_mind("Writers")
        _, bulk_mind, bulk_key = common.create_mind("Bulk")
        from django.db import connections

        from memories.models import Memory

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
                path = "/memory/search?" + urlencode({"q": q, "limit": 20, "mode": "keyword"})
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
            # Counted in the database: /memory/stats would load the model in a web worker.
            stored = Memory.objects.filter(mind=writers).count()
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
            bulk_total = Memory.objects.filter(mind=bulk_mind).count()
            bulk_rate = bulk_count / bulk_seconds
            raw_ours_rate = bulk_count / raw_seconds
            say(
                f"bulk load {bulk_rate:,.0f} memories/s, {bulk_total:,} stored; "
                f"raw inserts beside it {raw_ours_rate:,.0f}/s"
            )

            # 8. Memory per worker before any search by meaning (the model came with the fork).
            without_model = worker_memory_mb(server)

            # 9. Hybrid search, the same queries, each round beside the keyword search.
            hybrids = []
            for label, q in bench_search.QUERIES:
                keyword = "/memory/search?" + urlencode({"q": q, "limit": 20, "mode": "keyword"})
                hybrid = "/memory/search?" + urlencode({"q": q, "limit": 20, "mode": "hybrid"})
                hybrid_call = lambda p=hybrid: bench_search.check(client.get(p))  # noqa: E731
                until_model_in_every_worker(server, hybrid_call)
                samples = bench_search.interleaved(
                    {
                        "keyword": lambda p=keyword: bench_search.check(client.get(p)),
                        "hybrid": hybrid_call,
                    },
                    rounds=rounds,
                )
                hybrids.append((label, q, samples))
            say("hybrid search measured")
            with_model = worker_memory_mb(server)

            # 10. Store to vector at idle, the huey worker beside gunicorn.
            idle = store_to_vector_at_idle(server, db, write_key, stores=idle_stores, gap=1.0)
            say(f"store -> vector p95 {ms(idle, 95):.0f} ms")

            # 11. The dashboard, signed in as the measured mind's owner.
            dashboard = dashboard_pages(server, owner.email, password, mind.pk, rounds=rounds)
            verify_all = bench_dashboard.verify_all(dashboard.pop("browser"), to_verify)
            say(f"dashboard measured; verify all matching {verify_all:.2f} s")

            # 12. Webhooks: deliveries, change to delivery, and the writes with webhooks.
            webhooks = bench_webhooks.measure(server, db, quick=quick, say=say)

            # 13. Pictures: the measured mind's graph and timeline, beside a list page.
            pictures = bench_pictures.measure(client, requests=rounds, warmup=3)
            say(f"graph p50 {pictures[1].p50_ms:.1f} ms, timeline {pictures[2].p50_ms:.1f} ms")

            # 14. Recall as of a month back, after a month of writes to the measured mind.
            bench_as_of.age(mind)
            bench_as_of.a_month_of_writes(mind, 300 if quick else 3000)
            as_of = bench_as_of.measure(client, requests=rounds, warmup=3)
            say(f"recall as of a month back p50 {as_of[1].p50_ms:.1f} ms")
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
        without_model=without_model,
        with_model=with_model,
        hybrids=hybrids,
        embedding=embedding,
        agent_like=agent_like,
        idle=idle,
        dashboard=dashboard,
        verify_all=verify_all,
        webhooks=webhooks,
        pictures=pictures,
        as_of=as_of,
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
    ]
    for label, q, t in f["hybrids"]:
        hybrid, keyword = ms(t["hybrid"]), ms(t["keyword"])
        rows.append(
            Row(
                f"hybrid search {label} ({q[:22]})",
                f"{hybrid:.2f} / {ms(t['hybrid'], 95):.2f} ms",
                f"keyword {keyword:.2f} ms beside",
                f"+{hybrid - keyword:.2f} ms",
                "p50 <= keyword + 10 ms",
                hybrid <= keyword + 10,
            )
        )
    e = f["embedding"]
    a = f["agent_like"]
    idle = f["idle"]
    others = f["total_seeded"] - f["mind_size"]
    rows += [
        Row(
            f"worker embedding rate, 1 thread ({e['stored']:,} of the measured mind; "
            f"the other {others:,} not embedded)",
            f"{e['worker_rate']:,.0f} memories/s, {e['tokens']:.0f} tokens each",
            f"bare model, same texts {e['bare_rate']:,.0f}/s",
            f"{e['worker_rate'] / e['bare_rate']:.2f}x",
        ),
        Row(
            f"worker embedding rate, 1 thread, memories as agents write them "
            f"({a['stored']:,}, search_eval's contents)",
            f"{a['rate']:,.0f} memories/s, {a['tokens']:.0f} tokens each",
            f"measured mind's {e['worker_rate']:,.0f}/s beside",
            f"{a['rate'] / e['worker_rate']:.2f}x",
            ">= 40/s",
            a["rate"] >= 40,
        ),
        Row(
            f"store -> vector at idle, huey worker beside ({len(idle)} stores, 1 s apart)",
            f"{ms(idle):.0f} / {ms(idle, 95):.0f} ms",
            "",
            "",
            "p95 <= 2 s",
            ms(idle, 95) <= 2000,
        ),
    ]
    pages = f["dashboard"]
    beside = ms(pages["health"])
    for name in DASHBOARD_PAGES:
        page_p95 = ms(pages[name], 95)
        rows.append(
            Row(
                f"dashboard {name} ({size:,} memories)",
                f"{ms(pages[name]):.1f} / {page_p95:.1f} ms",
                f"/health {beside:.2f} ms beside",
                f"{ms(pages[name]) / beside:.0f}x",
                "p95 <= 100 ms",
                page_p95 <= 100,
            )
        )
    rows.append(
        Row(
            f"dashboard verify all matching, {bench_dashboard.VERIFY_SIZE:,} memories (1 POST)",
            f"{f['verify_all']:.2f} s",
        )
    )
    rows += bench_webhooks.rows(f["webhooks"], Row)
    baseline, *pictures = f["pictures"]
    for figure, target in zip(pictures, bench_pictures.TARGETS_MS.values(), strict=True):
        rows.append(
            Row(
                f"{figure.name} ({size:,} memories)",
                f"{figure.p50_ms:.1f} / {figure.p95_ms:.1f} ms",
                f"GET /memory page {baseline.p50_ms:.2f} ms",
                f"{figure.p50_ms / baseline.p50_ms:.1f}x",
                f"p50 <= {target:.0f} ms",
                figure.p50_ms <= target,
            )
        )
    for today, then in (f["as_of"][:2], f["as_of"][2:]):
        rows.append(
            Row(
                f"{then.name} ({size:,} memories)",
                f"{then.p50_ms:.1f} / {then.p95_ms:.1f} ms",
                f"today {today.p50_ms:.1f} ms",
                f"{then.p50_ms / today.p50_ms:.1f}x",
                "p50 <= 3x today",
                then.p50_ms <= 3 * today.p50_ms,
            )
        )
    bare, loaded = f["without_model"], f["with_model"]
    rows += [
        Row(
            f"peak RSS per worker ({f['total_seeded']:,}+ memories), before any search by "
            "meaning (model loaded before the fork)",
            " / ".join(f"{w['peak']:.0f}" for w in bare) + " MB",
            "PSS now " + " / ".join(f"{w['pss']:.0f}" for w in bare) + " MB",
            "",
            "<= 300 MB",
            max(w["peak"] for w in bare) <= 300 and all(w["model"] for w in bare),
        ),
        Row(
            "peak RSS per worker, model loaded (after hybrid search)",
            " / ".join(f"{w['peak']:.0f}" for w in loaded) + " MB",
            "PSS now " + " / ".join(f"{w['pss']:.0f}" for w in loaded) + " MB",
            "",
            "<= 300 MB",
            max(w["peak"] for w in loaded) <= 300 and all(w["model"] for w in loaded),
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
