"""Cron jobs on the real job engine: two workers (`manage.py run_huey`, as `make run` starts
one) starting at once after the jobs' due times passed run each missed job once between
them, not once per worker and not once per missed time."""

from __future__ import annotations

import sqlite3
import time

import pytest

from tests.reliability.harness import GunicornServer
from tests.reliability.test_embedding_worker import Worker, wait_for

pytestmark = pytest.mark.slow

JOBS = 5
SEED = """
from datetime import timedelta

from django.utils import timezone

from memories.actors import Actor
from minds.models import Mind
from scheduler.models import CronJob
from scheduler.services import cron_create

mind = Mind.objects.get()
for i in range({count}):
    body = {{"name": f"job {{i}}", "schedule": "0 0 1 1 *", "endpoint": "/memory/contradictions"}}
    job = cron_create(mind=mind, body=body, actor=Actor.system())
    # Missed for three hours, at every minute of them had it been due each minute.
    CronJob.objects.filter(pk=job.pk).update(next_run_at=timezone.now() - timedelta(hours=3))
"""


def runs(db: sqlite3.Connection) -> list[tuple[str, int]]:
    return db.execute(
        "SELECT job_id, count(*) FROM scheduler_cronrun GROUP BY job_id ORDER BY job_id"
    ).fetchall()


def test_two_workers_starting_run_each_missed_job_once(tmp_path):
    server = GunicornServer(tmp_path, env={"SYNAPSE_EMBEDDINGS": "off"})
    server.create_mind()
    server.manage("shell", "-c", SEED.format(count=JOBS))
    db = sqlite3.connect(server.db_path, timeout=30)
    workers = [Worker(server), Worker(server)]
    for worker in workers:
        worker.start()
    try:
        wait_for(lambda: len(runs(db)) == JOBS, workers[0], 90, "a run of every job")
        # Both workers have ticked at start once the log shows both consumers running.
        wait_for(
            lambda: workers[0].log().count("consumer started") >= 2, workers[1], 60, "both workers"
        )
        time.sleep(2)
    finally:
        for worker in workers:
            worker.kill()
    assert [count for _, count in runs(db)] == [1] * JOBS
    future = db.execute(
        "SELECT count(*) FROM scheduler_cronjob WHERE next_run_at > datetime('now')"
    ).fetchone()[0]
    assert future == JOBS
