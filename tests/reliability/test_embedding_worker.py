"""Crash safety of the embedding worker: SIGKILL mid-batch loses no work and stores none twice.

The worker runs as `make run` runs it (`manage.py run_huey`, huey's SQLite queue in the data
directory) on a SQLite file holding a few hundred memories waiting for their vectors. Once
some but not all have a vector, the worker is killed with SIGKILL (no shutdown, no rollback
by the process). At that moment every memory has either a vector or a job, never both and
never neither; after a restart every memory ends with exactly one vector, of its current
text and the current model, and no job is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from memories.embeddings.e5 import DIMENSIONS, MODEL
from memories.embeddings.text import embedding_text, text_hash
from tests.reliability.harness import REPO, GunicornServer

pytestmark = pytest.mark.slow

MEMORIES = 320
SEED = f"""
from memories.actors import Actor
from memories.services import memory_upsert_many
from minds.models import Mind

mind = Mind.objects.get()
items = [
    {{"category": "note", "key": f"note_{{i}}", "content": f"Memory number {{i}} of the crash test",
      "tags": ["crash", f"t{{i % 7}}"]}}
    for i in range({MEMORIES})
]
memory_upsert_many(mind=mind, actor=Actor.system(), items=items)
"""


class Worker:
    def __init__(self, server: GunicornServer):
        self.server = server
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = open(self.server.data_dir / "worker.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.process = subprocess.Popen(
                [sys.executable, "manage.py", "run_huey"],
                cwd=REPO,
                env=self.server.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()

    def kill(self) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def log(self) -> str:
        return (self.server.data_dir / "worker.log").read_text(errors="replace")[-3000:]


def counts(db: sqlite3.Connection) -> tuple[int, int, int]:
    """(vectors, jobs, memories that have both or neither)."""
    vectors = db.execute("SELECT count(*) FROM memories_memoryvector").fetchone()[0]
    jobs = db.execute("SELECT count(*) FROM memories_embeddingjob").fetchone()[0]
    wrong = db.execute(
        "SELECT count(*) FROM memories_memory m "
        "LEFT JOIN memories_memoryvector v ON v.memory_id = m.id "
        "LEFT JOIN memories_embeddingjob j ON j.memory_id = m.id "
        "WHERE (v.memory_id IS NULL) = (j.memory_id IS NULL)"
    ).fetchone()[0]
    return vectors, jobs, wrong


def wait_for(predicate, worker: Worker, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        assert worker.process is not None
        if worker.process.poll() is not None:
            raise AssertionError(f"the worker exited while waiting for {what}:\n{worker.log()}")
        time.sleep(0.005)
    raise AssertionError(f"no {what} within {timeout}s:\n{worker.log()}")


def test_sigkill_mid_batch_loses_no_vector_and_stores_none_twice(tmp_path):
    server = GunicornServer(tmp_path, env={"SYNAPSE_EMBEDDINGS": "local", "LOG_LEVEL": "INFO"})
    server.create_mind()
    server.manage("shell", "-c", SEED)
    db = sqlite3.connect(server.db_path, timeout=30)
    assert counts(db) == (0, MEMORIES, 0)

    worker = Worker(server)
    worker.start()
    try:
        # Killed once some vectors are stored and while the rest are being embedded.
        wait_for(lambda: 0 < counts(db)[0] < MEMORIES, worker, 120, "first vectors")
    finally:
        worker.kill()
    vectors, jobs, wrong = counts(db)
    assert 0 < vectors < MEMORIES, "the kill did not land mid-way; the test proves nothing"
    assert (vectors + jobs, wrong) == (MEMORIES, 0)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    worker.start()
    try:
        wait_for(lambda: counts(db) == (MEMORIES, 0, 0), worker, 120, "every vector")
    finally:
        worker.kill()

    rows = db.execute(
        "SELECT m.key, m.content, m.tags, v.text_hash, v.model, length(v.vector) "
        "FROM memories_memory m JOIN memories_memoryvector v ON v.memory_id = m.id"
    ).fetchall()
    assert len(rows) == MEMORIES
    for key, content, tags, stored_hash, model, size in rows:
        text = embedding_text(SimpleNamespace(key=key, content=content, tags=json.loads(tags)))
        assert (stored_hash, model, size) == (text_hash(text), MODEL, DIMENSIONS * 4), key
