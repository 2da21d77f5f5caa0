"""Scale-out: two gunicorn workers on PostgreSQL sharing a Redis cache behave as one server.

gunicorn is started the way `make run` starts it (gunicorn.conf.py, WEB_CONCURRENCY=2), on
this test run's PostgreSQL database, with CACHE_URL on Redis database 15 (only that one is
flushed) and SYNAPSE_RATE_LIMIT=30/min:
- 60 requests with one Mind Key, sent at once from several threads (more if one worker took
  them all): exactly 30 answered 200, all others 429, and both workers served some;
- 24 racing upserts of one key: one memory, one "created", no 5xx.
Runs in the PostgreSQL pass of `make test`; skipped, saying why, without Redis.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection

from memories.models import Memory
from minds.services import mind_create
from tests.reliability.harness import free_port

REPO = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
REDIS_URL = os.environ.get("SYNAPSE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
LIMIT = 30

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
]


def redis_or_skip():
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL} ({exc}); set SYNAPSE_TEST_REDIS_URL")
    return client


def database_url() -> str:
    """This test run's PostgreSQL database (test_…), for the server processes."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Server:
    def __init__(self, tmp_path: Path):
        self.port = free_port()
        self.log = tmp_path / "gunicorn.log"
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(
            DATABASE_URL=database_url(),
            CACHE_URL=REDIS_URL,
            SYNAPSE_RATE_LIMIT=f"{LIMIT}/min",
            SECRET_KEY=secrets.token_urlsafe(64),
            SYNAPSE_DATA_DIR=str(tmp_path),
            DEBUG="false",
            HOST="127.0.0.1",
            PORT=str(self.port),
            WEB_CONCURRENCY="2",
        )
        with open(self.log, "wb") as log:
            # As `make run`, plus the worker's pid in each access-log line.
            self.process = subprocess.Popen(
                [
                    str(GUNICORN),
                    *("--config", "gunicorn.conf.py", "synapse_site.wsgi"),
                    *("--access-logformat", "pid=%(p)s %(m)s %(U)s %(s)s"),
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"gunicorn did not answer:\n{self.log.read_text()}")

    def request(self, method, path, *, token=None, body=None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request(method, path, body=json.dumps(body) if body else None, headers=headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def pids_serving(self, path: str) -> set[str]:
        lines = self.log.read_text(errors="replace").splitlines()
        return {m.group(1) for line in lines if (m := re.search(rf"pid=<(\d+)> \S+ {path} ", line))}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def server(tmp_path, owner):
    redis_client = redis_or_skip()
    redis_client.flushdb()  # database 15 only
    started = Server(tmp_path)
    yield started
    started.stop()
    redis_client.flushdb()


def at_once(calls: int, call, threads: int = 12) -> list:
    barrier = threading.Barrier(threads)

    def worker(index):
        if index < threads:
            barrier.wait()
        return call(index)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(worker, range(calls)))


def test_rate_limit_holds_across_workers(server, owner):
    _, key = mind_create(owner=owner, name="Rate")
    statuses = Counter(at_once(2 * LIMIT, lambda i: server.request("GET", "/memory", token=key)[0]))
    # The kernel may hand every connection of a batch to one worker; more batches (all within
    # the minute) until the other has served too. Once both have, a limit kept per worker
    # would have let the second answer 200 beyond the first LIMIT.
    for _ in range(20):
        if len(server.pids_serving("/memory")) == 2:
            break
        statuses.update(at_once(LIMIT, lambda i: server.request("GET", "/memory", token=key)[0]))
    assert len(server.pids_serving("/memory")) == 2, server.log.read_text()[-3000:]
    assert statuses[200] == LIMIT
    assert set(statuses) == {200, 429}


def test_racing_upserts_make_one_memory(server, owner):
    mind, key = mind_create(owner=owner, name="Race")
    body = {"category": "preference", "key": "preference_editor", "content": "Neovim"}

    def store(i):
        status, raw = server.request(
            "POST", "/memory", token=key, body={**body, "content": f"Neovim, take {i}"}
        )
        return status, json.loads(raw)

    answers = at_once(24, store)
    statuses = Counter(status for status, _ in answers)
    assert statuses == {201: 1, 200: 23}, answers
    assert {a["action"] for _, a in answers} == {"created", "updated"}
    assert Memory.objects.filter(mind=mind, key="preference_editor").count() == 1
    assert len({a["id"] for _, a in answers}) == 1
