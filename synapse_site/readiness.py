"""GET /health/ready: may this server take traffic? The database answers, every migration is
applied, and (when search by meaning is on) a background worker was heard from lately.

Each check is cheap enough for a probe every few seconds: one `SELECT 1`, the migration plan
only until it is first found empty (then remembered for the life of the process: migrations
are not undone under a running server), and one read of the worker's heartbeat.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from memories.embeddings import outbox

logger = logging.getLogger(__name__)

_migrations_applied = False


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        logger.warning("Not ready: the database does not answer", exc_info=True)
        return Check("database", False, "the database does not answer")
    return Check("database", True, "ok")


def migrations() -> Check:
    global _migrations_applied
    if _migrations_applied:
        return Check("migrations", True, "ok")
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        logger.warning("Not ready: the migrations could not be read", exc_info=True)
        return Check("migrations", False, "the applied migrations could not be read")
    if plan:
        return Check("migrations", False, f"{len(plan)} not applied (run manage.py migrate)")
    _migrations_applied = True
    return Check("migrations", True, "ok")


def worker(now: float | None = None) -> Check:
    if not outbox.enabled():
        return Check("worker", True, "not needed: SYNAPSE_EMBEDDINGS is off")
    from memories.tasks import WORKER_SEEN_WITHIN, worker_last_seen

    try:
        seen = worker_last_seen()
    except Exception:  # the task queue's storage (a SQLite file, Redis) does not answer
        logger.warning("Not ready: the task queue does not answer", exc_info=True)
        return Check("worker", False, "the background worker's task queue does not answer")
    if seen is None:
        return Check("worker", False, "no background worker has run (manage.py run_huey)")
    age = (time.time() if now is None else now) - seen
    if age > WORKER_SEEN_WITHIN:
        return Check(
            "worker",
            False,
            f"no background worker heard from for {int(age)} s (manage.py run_huey)",
        )
    return Check("worker", True, "ok")


def checks() -> list[Check]:
    """Every check, in order; the migrations are not looked at without a database."""
    db = database()
    plan = migrations() if db.ok else Check("migrations", False, "not checked: no database")
    return [db, plan, worker()]
