"""Background tasks, run by huey's consumer (`manage.py run_huey`, started by `make run`).

The work lives in the database (the embedding outbox, memories/embeddings/outbox.py); a
task only says "look at it now". So a lost or duplicated task loses nothing and stores
nothing twice: a write that queued jobs wakes the worker after its commit (`wake`, at most
once per WAKE_INTERVAL per process), a periodic task looks every minute anyway, and a worker
starting queues every memory with no vector of the current model and gives parked jobs
(refused by the embedder again and again) another round of attempts. A running worker also
beats a heartbeat, read by GET /health/ready.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from django.db import close_old_connections
from huey import crontab
from huey.contrib.djhuey import HUEY, db_periodic_task, db_task, on_startup

from core.wake import Waker
from memories.embeddings import get_embedder, outbox
from memories.hygiene.health import hygiene_check_due

logger = logging.getLogger(__name__)

# Seconds: a burst of single writes enqueues one task, not one each.
WAKE_INTERVAL = 0.5


@db_task()
def embed_pending() -> int:
    """Embed every queued memory; the number of vectors stored."""
    return outbox.embed_pending()


@db_periodic_task(crontab(minute="*"))
def embed_pending_periodically() -> int:
    """The safety net: jobs whose wake-up was lost (a queue down, a process killed)."""
    return outbox.embed_pending()


@on_startup()
def queue_missing_at_start() -> None:
    """Queue memories with no vector of the current model (new install, model changed), and
    retry parked jobs (the embeddings API or its settings may have changed)."""
    try:
        embedder = get_embedder()
        if embedder is None:
            return
        queued = outbox.queue_missing(model=embedder.model)
        if queued:
            logger.info("Queued %d memories for embedding with %s", queued, embedder.model)
        retried = outbox.retry_parked()
        if retried:
            logger.info("Retrying %d parked embedding jobs", retried)
        embed_pending()
    except Exception:  # the worker still runs: the periodic task takes what is queued
        logger.exception("Could not queue the memories that have no vector")
    finally:
        close_old_connections()


# Set by a write's commit, served by one thread per process: the enqueue (a write to the queue)
# never runs in the request, and a burst of writes is one enqueue per WAKE_INTERVAL.
_waker = Waker(
    lambda: embed_pending(),
    name="embedding-waker",
    interval=WAKE_INTERVAL,
    immediate=lambda: bool(HUEY.immediate),  # tests: the task runs here and now
)


def wake() -> None:
    """Ask for `embed_pending` to run soon. Returns at once (core/wake.py)."""
    _waker.wake()


# The worker's heartbeat, so GET /health/ready and /metrics can tell a running worker from none.
# It is kept in the task queue's own storage, which every web and worker process shares.
HEARTBEAT_KEY = "worker-heartbeat"
HEARTBEAT_INTERVAL = 10
# A worker not heard from for this many seconds counts as gone (several beats missed).
WORKER_SEEN_WITHIN = 60
_beating_pid: int | None = None


def beat(now: float | None = None) -> None:
    """Record that a worker is alive (now, unless told when)."""
    HUEY.put(HEARTBEAT_KEY, time.time() if now is None else now)


def worker_last_seen() -> float | None:
    """When a worker last reported alive (Unix time), or None if none ever did."""
    value = HUEY.get(HEARTBEAT_KEY, peek=True)
    return float(value) if value is not None else None


@on_startup()
def start_heartbeat() -> None:
    """In the worker process: beat now, then every HEARTBEAT_INTERVAL seconds while it runs
    (from a thread of its own, so a long batch of embeddings does not stop it)."""
    global _beating_pid
    if _beating_pid == os.getpid():
        return
    _beating_pid = os.getpid()
    _beat_logged()
    threading.Thread(target=_beat_forever, name="worker-heartbeat", daemon=True).start()


def _beat_forever() -> None:
    while True:
        time.sleep(HEARTBEAT_INTERVAL)
        _beat_logged()


def _beat_logged() -> None:
    try:
        beat()
    except Exception:  # the queue's storage is down: readiness will say so; keep trying
        logger.exception("Could not record the worker's heartbeat")


# The hygiene checks' counts (memories/hygiene/health.py), from a thread of the worker
# process rather than a task: a check reads a whole mind, and the embedding tasks must never
# wait behind it on the consumer's one worker thread.
HYGIENE_INTERVAL = 60
_hygiene_pid: int | None = None


@on_startup()
def start_hygiene_checks() -> None:
    """In the worker process: check the minds that are due every HYGIENE_INTERVAL seconds."""
    global _hygiene_pid
    if _hygiene_pid == os.getpid():
        return
    _hygiene_pid = os.getpid()
    threading.Thread(target=_check_forever, name="hygiene-checks", daemon=True).start()


def _check_forever() -> None:
    while True:
        time.sleep(HYGIENE_INTERVAL)
        check_hygiene_logged()


def check_hygiene_logged() -> int:
    """hygiene_check_due, its failures logged (the next round tries again); minds checked."""
    try:
        return hygiene_check_due()
    except Exception:
        logger.exception("Could not run the hygiene checks")
        return 0
    finally:
        close_old_connections()
