"""The worker's peak memory while it answers with a whole mind filled to its default quota.

    .venv/bin/python bench/bench_peak_memory.py            # about a minute
    .venv/bin/python bench/bench_peak_memory.py --quick    # a tenth of the mind, a smoke run

On a fresh temporary SQLite database (bench/common.py) with the default quotas per mind, one
mind is filled to them (SYNAPSE_MAX_MEMORIES_PER_MIND memories whose content adds up to
SYNAPSE_MAX_MIND_BYTES) through the write services, as a sync would. Then gunicorn starts as
`make run` starts it but with one worker, and each request below is sent alone. Before each,
the worker's peak resident memory (VmHWM) is reset to what it holds now (`5` written to
/proc/<pid>/clear_refs) and a tiny request warms the worker. The table shows,
per request: the answer's size, the time to read it, the worker's memory before it and its
peak during it. The first row is the baseline: a tiny request.

Loopback only, bounded, nothing asserted.
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

from bench import common

PORT = 8791
DEFAULT_MEMORIES = 10_000
DEFAULT_BYTES = 50 * 1024 * 1024


def fill(mind, *, memories: int, total_bytes: int) -> int:
    """`memories` memories whose content (ASCII) adds up to at most `total_bytes`, stored
    through the services a sync uses, a thousand a call. Returns the bytes stored."""
    from memories.actors import Actor
    from memories.services import memory_upsert_many

    actor = Actor(kind="agent", name="mk_bench")
    size = total_bytes // memories
    words = " ".join(common.WORDS)
    text = (words + " ") * (size // (len(words) + 1) + 1)
    for start in range(0, memories, 1000):
        items = [
            {
                "category": common.CATEGORIES[i % len(common.CATEGORIES)],
                "key": f"bench_{i:06d}",
                "content": f"{i:06d} {text}"[:size],
                "tags": ["bench", f"t{i % 7}"],
                "priority": ["low", "normal", "high", "critical"][i % 4],
            }
            for i in range(start, min(start + 1000, memories))
        ]
        memory_upsert_many(mind=mind, actor=actor, items=items)
    return size * memories


def worker_pid(server: common.Server, *, old: int | None = None) -> int:
    """The pid of the (one) gunicorn worker; a new one than `old` when asked to wait."""
    master = server.process.pid
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children and int(children[0]) != old:
            return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("no gunicorn worker")


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux: 5 > clear_refs); False when not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def fetch(port: int, key: str, method: str, path: str, body: bytes | None = None) -> tuple:
    """(status, bytes, seconds): the answer read in pieces and counted, never kept whole."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    headers = {"Authorization": f"Bearer {key}", "Accept": "*/*", "Connection": "close"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    started = time.perf_counter()
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    size = 0
    while piece := response.read(1 << 20):
        size += len(piece)
    conn.close()
    return response.status, size, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the mind")
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    memories = DEFAULT_MEMORIES // (10 if args.quick else 1)
    total_bytes = DEFAULT_BYTES // (10 if args.quick else 1)

    db = common.BenchDatabase()
    for name in ("SYNAPSE_MAX_MEMORIES_PER_MIND", "SYNAPSE_MAX_MIND_BYTES"):
        db.env.pop(name, None)  # the defaults: what the mind is filled to
        os.environ.pop(name, None)
    mcp_batch = json.dumps(
        [
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "list_memories", "arguments": {"limit": 200, "offset": n}},
            }
            for n in range(50)
        ]
    ).encode()
    requests = [
        ("GET /memory?limit=1 (baseline)", "GET", "/memory?limit=1", None),
        ("GET /memory/recall", "GET", "/memory/recall", None),
        ("GET /memory/recall?format=json", "GET", "/memory/recall?format=json", None),
        ("GET /memory/diff?since=0", "GET", "/memory/diff?since=0", None),
        ("GET /mind/export?format=json", "GET", "/mind/export?format=json", None),
        ("GET /mind/export?format=csv", "GET", "/mind/export?format=csv", None),
        ("GET /memory/audit?limit=1000", "GET", "/memory/audit?limit=1000", None),
        ("POST /mcp, 50 x list_memories limit 200", "POST", "/mcp", mcp_batch),
    ]
    with db:
        _, mind, key = common.create_mind("Full")
        started = time.perf_counter()
        stored = fill(mind, memories=memories, total_bytes=total_bytes)
        db.settle()
        print(
            f"filled a mind with {memories:,} memories, {stored / 2**20:.1f} MiB of content, "
            f"in {time.perf_counter() - started:.0f}s",
            file=sys.stderr,
        )
        from django.db import connections

        connections.close_all()

        rows = []
        with common.Server(db, port=args.port, workers=1) as server:
            pid = worker_pid(server)
            if not reset_peak(pid):
                raise SystemExit("/proc/<pid>/clear_refs is not writable here")
            for label, method, path, body in requests:
                fetch(args.port, key, "GET", "/memory?limit=1")  # the worker is warm
                reset_peak(pid)
                base = vm_kb(pid, "VmHWM")
                status, size, seconds = fetch(args.port, key, method, path, body)
                peak = vm_kb(pid, "VmHWM")
                rows.append((label, status, size, seconds, base, peak))

    print(f"\nPeak worker memory, one gunicorn worker, a mind of {memories:,} memories and")
    print(f"{stored / 2**20:.1f} MiB of content (the default quotas), each request alone\n")
    head = f"{'request':42}  {'status':>6}  {'answer':>10}  {'time':>7}  {'before':>8}  {'peak':>8}"
    print(head + f"  {'growth':>8}")
    print("-" * (len(head) + 10))
    for label, status, size, seconds, base, peak in rows:
        print(
            f"{label:42}  {status:>6}  {size / 2**20:8.1f}MB  {seconds:6.2f}s  "
            f"{base / 1024:6.0f}MB  {peak / 1024:6.0f}MB  {(peak - base) / 1024:6.0f}MB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
