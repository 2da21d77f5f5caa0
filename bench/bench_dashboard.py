"""Benchmark: the dashboard at the size of a real mind, and "verify all matching" on 5,000.

Run it from the repository root:

    .venv/bin/python bench/bench_dashboard.py                 # 100 rounds, SQLite
    .venv/bin/python bench/bench_dashboard.py --requests 30 --verify-rounds 2
    .venv/bin/python bench/bench_dashboard.py --database sqlite,postgres   # side by side

What it does: a fresh database (bench/common.py), one person with a mind of 10,000
memories seeded as bench_memories seeds them (30% verified, 2% expired: the review queue
holds about 6,800), and `--verify-rounds` more minds of 5,000 unverified memories each;
gunicorn started as `make run` starts it (static files collected first), on 127.0.0.1
only, with SYNAPSE_EMBEDDINGS=off: nothing here is embedded, so the search is by keywords
(`make bench` times the same pages with search by meaning). The person logs in through the
login form and keeps the session cookie, as a browser does. Each page is timed in rounds,
one request of each per round after a warm-up, beside `GET /health` (the framework floor);
the figures are the time to the whole answer on a keep-alive loopback connection.

Pages: the memory table (first page, last page, 200 a page), a search for a common word
(about half the mind matches) best first and sorted by key, the review queue (first and last
page), and the "verify all matching" confirmation of the whole queue (it counts what it
would verify).

Then "verify all matching" itself: for each 5,000-memory mind, its confirmation page is
read (the count and the marker of what the person saw), and the POST that verifies all of
them in one action is timed; afterwards every one is checked verified, with one audit row
each. Target: each page p95 <= 100 ms.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_search, common

PAGE_TARGET_MS = 100
VERIFY_SIZE = 5000
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


class Browser:
    """A keep-alive connection that keeps cookies and sends forms, as a browser does."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict | None = None) -> common.Reply:
        headers = {"Accept": "text/html"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            self.conn.close()  # a closed keep-alive connection: retry once on a fresh one
            started = time.perf_counter()
            self.conn.request(method, path, body=body, headers=headers)
            response = self.conn.getresponse()
        data = response.read()
        reply = common.Reply(response.status, data, time.perf_counter() - started)
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                cookie, _, _ = value.partition(";")
                key, _, val = cookie.partition("=")
                self.cookies[key.strip()] = val.strip()
        return reply

    def get(self, path: str) -> common.Reply:
        return self.request("GET", path)

    def post(self, path: str, form: dict) -> common.Reply:
        return self.request("POST", path, form)


def hidden_inputs(html: bytes) -> dict[str, str]:
    return dict(HIDDEN.findall(html.decode()))


def log_in(browser: Browser, email: str, password: str) -> None:
    page = browser.get("/accounts/login/")
    token = hidden_inputs(page.body)["csrfmiddlewaretoken"]
    reply = browser.post(
        "/accounts/login/",
        {"csrfmiddlewaretoken": token, "username": email, "password": password},
    )
    if reply.status != 302 or "sessionid" not in browser.cookies:
        raise RuntimeError(f"login failed: HTTP {reply.status}")


def seed(args) -> tuple:
    """The person, the measured mind (10,000) and the minds to verify (5,000 unverified each)."""
    from accounts.models import User
    from minds.services import mind_create

    email, password = f"bench-{secrets.token_hex(4)}@example.com", secrets.token_urlsafe(16)
    person = User.objects.create_user(email=email, password=password)
    mind, _ = mind_create(owner=person, name="Measured")
    common.seed_memories(mind, args.memories, seed=1)
    to_verify = []
    for n in range(args.verify_rounds):
        other, _ = mind_create(owner=person, name=f"To verify {n}")
        common.seed_memories(other, VERIFY_SIZE, seed=50 + n, verified_share=0, expired_share=0)
        to_verify.append(other)
    return email, password, mind, to_verify


def dashboard_pages(mind_id: str) -> dict[str, str]:
    """The pages timed, by name: the table, a search, the review queue."""
    table = f"/dashboard/minds/{mind_id}/memories/"
    review = f"/dashboard/minds/{mind_id}/review/"
    return {
        "memory table, page 1": table,
        "memory table, ?page=last": f"{table}?page=last",
        "memory table, 200 a page": f"{table}?per_page=200",
        "search 'deploy', best first": f"{table}?q=deploy",
        "search 'deploy', by key": f"{table}?q=deploy&sort=key",
        "review queue, page 1": review,
        "review queue, ?page=last": f"{review}?page=last",
        "verify all: confirmation": f"{table}verify-all/?verified=no",
    }


def collect_static() -> None:
    """The pages name their stylesheet through the static manifest, as `make run` has it."""
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)


def verify_all(browser: Browser, mind) -> float:
    """The confirmation page of the whole queue of `mind`, then its POST, timed (seconds)."""
    from memories.models import Memory, MemoryEvent

    confirm = f"/dashboard/minds/{mind.pk}/memories/verify-all/?verified=no"
    form = hidden_inputs(bench_search.check(browser.get(confirm)).body)
    reply = browser.post(f"/dashboard/minds/{mind.pk}/memories/verify-all/", form)
    if reply.status != 302:
        raise RuntimeError(f"verify all: HTTP {reply.status}: {reply.body[:300]!r}")
    verified = Memory.objects.filter(mind=mind, verified=True).count()
    audited = MemoryEvent.objects.filter(mind=mind, action="verify").count()
    if verified != VERIFY_SIZE or audited != VERIFY_SIZE:
        raise RuntimeError(f"verify all: {verified} verified, {audited} audited")
    return reply.seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=100, help="rounds per page")
    parser.add_argument("--verify-rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8731, help="8730-8739")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    parser.add_argument(
        "--database", type=common.database_list, default=["sqlite"], help="sqlite,postgres"
    )
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if common.per_database(__file__, argv, args.database):
        return 0

    os.environ["SYNAPSE_EMBEDDINGS"] = "off"  # the server's too: it inherits this process's
    with common.BenchDatabase(keep=args.keep, database=args.database[0]) as db:
        started = time.perf_counter()
        email, password, mind, to_verify = seed(args)
        db.settle()
        print(
            f"seeded {args.memories:,} + {len(to_verify)} x {VERIFY_SIZE:,} memories in "
            f"{time.perf_counter() - started:.1f}s ({db.path or db.url})"
        )
        from django.db import connections

        collect_static()
        connections.close_all()
        with common.Server(db, port=args.port, workers=args.workers) as server:
            browser = Browser(server.host, server.port)
            log_in(browser, email, password)
            anonymous = server.client()
            pages = dashboard_pages(mind.pk)
            for path in pages.values():  # every page answers before anything is timed
                bench_search.check(browser.get(path))
            calls = {
                name: (lambda p=path: bench_search.check(browser.get(p)))
                for name, path in pages.items()
            }
            calls["GET /health"] = lambda: bench_search.check(anonymous.get("/health"))
            samples = bench_search.interleaved(calls, rounds=args.requests)
            verify_seconds = [verify_all(browser, other) for other in to_verify]

    health = common.Figure("GET /health", samples.pop("GET /health"))
    figures = [health]
    for name, timings in samples.items():
        figure = common.Figure(name, timings)
        figure.note = "" if figure.p95_ms <= PAGE_TARGET_MS else f"p95 over {PAGE_TARGET_MS} ms"
        figures.append(figure)
    verify = common.Figure(f"verify all matching, {VERIFY_SIZE:,} memories (POST)", verify_seconds)
    figures.append(verify)
    print()
    print(common.format_table(figures, baseline=health))
    print(
        f"\n(rounds: {args.requests} per page, {len(verify_seconds)} verify-all; "
        f"{args.workers} workers; target: every page p95 <= {PAGE_TARGET_MS} ms)"
    )
    common.write_results(
        args.results,
        [{"name": f.name, "p50": f.p50_ms, "p95": f.p95_ms} for f in figures if f.timings],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
