"""Crash safety of webhook deliveries: a worker killed with SIGKILL mid-delivery loses none.

A mind with a webhook (a receiver this test runs on 127.0.0.1) stores memories; the worker
(`manage.py run_huey`, as `make run` starts it) sends their events. The receiver holds the
first request open, and while it is held the worker is killed with SIGKILL: no shutdown, no
rollback by the process. After a restart the receiver gets every event, each signed, each
sequence number at least once (at least once: the held one may come twice, with the same
`webhook-id`), and every delivery ends delivered.
"""

from __future__ import annotations

import sqlite3
import time

import pytest

from tests.reliability.harness import GunicornServer
from tests.reliability.test_embedding_worker import Worker, wait_for
from tests.webhook_receiver import receiving, whsec

pytestmark = pytest.mark.slow

EVENTS = 40
SECRET = whsec(b"crash-test-secret-bytes")
SEED = """
from memories.actors import Actor
from memories.services import memory_upsert_many
from minds.models import Mind
from webhooks.services import webhook_create

mind = Mind.objects.get()
webhook_create(mind=mind, body={{"url": {url!r}, "secret": {secret!r}}})
items = [
    {{"category": "note", "key": f"note_{{i}}", "content": f"Memory {{i}} of the crash test"}}
    for i in range({count})
]
memory_upsert_many(mind=mind, actor=Actor.system(), items=items)
"""


def delivered(db: sqlite3.Connection) -> int:
    return db.execute(
        "SELECT count(*) FROM webhooks_webhookdelivery WHERE status = 'delivered'"
    ).fetchone()[0]


def test_sigkill_mid_delivery_loses_no_event(tmp_path):
    server = GunicornServer(
        tmp_path, env={"SYNAPSE_EMBEDDINGS": "off", "SYNAPSE_WEBHOOKS_ALLOW_PRIVATE": "true"}
    )
    server.create_mind()
    with receiving(answers=["hang"]) as receiver:
        server.manage("shell", "-c", SEED.format(url=receiver.url, secret=SECRET, count=EVENTS))
        db = sqlite3.connect(server.db_path, timeout=30)
        worker = Worker(server)
        worker.start()
        try:
            # Killed while the receiver holds the first delivery open.
            receiver.wait_for(1, timeout=60)
        finally:
            worker.kill()
        assert delivered(db) == 0, "the kill did not land mid-delivery; the test proves nothing"
        receiver.release()

        worker.start()
        try:
            wait_for(lambda: delivered(db) == EVENTS, worker, 90, "every delivery")
        finally:
            worker.kill()
        time.sleep(0.2)  # a delivery's last bytes may still be on their way to the list
        payloads = receiver.verified(SECRET)
    seqs = [p["data"]["seq"] for p in payloads]
    assert set(seqs) == set(range(1, EVENTS + 1))
    assert all(p["type"] == "memory.created" for p in payloads)
    # A repeat is the same message: a receiver de-duplicates it by its id.
    ids = {r.headers["webhook-id"]: r.json["data"]["seq"] for r in receiver.received}
    assert len(ids) == EVENTS
