"""Back up while the server takes writes, restore into a fresh data directory, serve it.

The procedure of docs/operations.md, end to end: `manage.py backup` against the database a
running gunicorn writes to, then a second server started on a copy of the backup in an empty
data directory answers with the same memories, finds them by search, and passes the checks.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time

import pytest

from tests.reliability.harness import GunicornServer

pytestmark = pytest.mark.slow


def test_backup_under_writes_restores_into_a_fresh_data_dir(tmp_path):
    live = GunicornServer(tmp_path / "live")
    (tmp_path / "live").mkdir()
    key = live.create_mind("backup@example.com")
    live.start()
    acked: list[str] = []
    stop = threading.Event()

    def write() -> None:
        client = live.client(token=key)
        n = 0
        while not stop.is_set():
            n += 1
            reply = client.request(
                "POST",
                "/memory",
                json_body={"category": "fact", "key": f"b{n}", "content": f"backupword{n}"},
            )
            assert reply.status == 201, reply.body
            acked.append(f"b{n}")
        client.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 50:
            # A writer that died (its assert failed) must fail the test, not hang it.
            assert writer.is_alive(), "the writer stopped before 50 writes"
            assert time.monotonic() < deadline, f"only {len(acked)} writes in 30 s"
            stop.wait(0.01)
        before = len(acked)
        backup = tmp_path / "synapse-backup.sqlite3"
        out = live.manage("backup", str(backup)).stdout
        after = len(acked)
        assert "Backed up" in out
    finally:
        stop.set()
        writer.join()
        live.stop()

    copy = sqlite3.connect(backup)
    keys = {row[0] for row in copy.execute("SELECT key FROM memories_memory")}
    copy.close()
    assert set(acked[:before]) <= keys  # everything acknowledged before the backup began
    assert keys <= set(acked[: after + 2])  # and nothing that was never written

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(backup, fresh / "synapse.sqlite3")
    restored = GunicornServer(fresh)
    restored.manage("migrate", "--noinput")  # a no-op on a current backup; as the docs say
    check = restored.manage("search_index", "--check", check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    restored.start()
    try:
        client = restored.client(token=key)  # the same mind, the same key
        assert client.request("GET", "/memory?limit=1").json()["total"] == len(keys)
        last = max(keys, key=lambda k: int(k[1:]))
        hits = client.request("GET", f"/memory/search?q=backupword{last[1:]}").json()
        assert [r["key"] for r in hits["results"]] == [last]
        reply = client.request("POST", "/memory", json_body={"category": "note", "content": "new"})
        assert reply.status == 201
        client.close()
    finally:
        restored.stop()
