"""Running due jobs: the tick the job engine calls every minute (scheduler/tasks.py).

Each due time runs once however many workers tick: a worker claims a job by moving its
`next_run_at` from the value it read to the schedule's next time after now, in one
conditional UPDATE, and only the worker whose update took runs it. A job whose due times
passed while no worker ran is claimed once and moves straight to its next future time, so it
runs once, not once per missed time. A worker killed between the claim and the record loses
that run rather than repeating it.

A path on this server runs in-process as the mind's agent, through the runner the API
registers for it at start (`register_local`), so no key is stored; an outside URL is called
by the webhooks' sender (webhooks/destinations.py), its address checked again at each run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import CoreError
from core.sealed import Unsealable, unseal
from minds.models import Mind
from scheduler.models import CronJob, CronRun
from scheduler.rules import (
    LOCAL_ENDPOINTS,
    body_bytes,
    local_body,
    local_path,
    local_query,
    next_run,
)
from scheduler.selectors import RUNS_MAX, run_to_dict
from webhooks import destinations, events
from webhooks.models import RESPONSE_HEAD_BYTES

logger = logging.getLogger(__name__)

USER_AGENT = "Synapse-Scheduler/1"
# Jobs claimed by one look; a tick looks again until none is due.
BATCH = 50

# A local endpoint's runner: (mind, the endpoint's query string, JSON body) → (HTTP status,
# answer). The face that registers it reads the query.
LocalRunner = Callable[[Mind, str, dict[str, Any]], tuple[int, Any]]
_local: dict[str, LocalRunner] = {}


def register_local(path: str, run: LocalRunner) -> None:
    """How a path of LOCAL_ENDPOINTS runs (the API registers them at start)."""
    if path not in LOCAL_ENDPOINTS:
        raise ValueError(f"{path} is not one of the scheduler's local endpoints.")
    _local[path] = run


@dataclass(frozen=True)
class Outcome:
    status: int | None
    text: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def call(job: CronJob) -> Outcome:
    """Run the job's request once; never raises for the endpoint's sake."""
    path = local_path(job.endpoint)
    if path is not None:
        return _call_local(job, path)
    return _call_outside(job)


def _call_local(job: CronJob, path: str) -> Outcome:
    started = time.monotonic()

    def outcome(status: int | None, text: str) -> Outcome:
        return Outcome(status, text[:RESPONSE_HEAD_BYTES], int((time.monotonic() - started) * 1000))

    run = _local.get(path)
    if run is None:
        return outcome(None, f"Nothing runs {path} in this process.")
    try:
        body = local_body(job.body_value) if job.method != "GET" else {}
        status, answer = run(job.mind, local_query(job.endpoint), body)
    except CoreError as error:
        return outcome(None, error.text())
    except Exception as error:  # the job's failure, recorded; the tick goes on
        logger.exception("Cron job %s failed", job.pk)
        return outcome(None, f"{type(error).__name__}: the run failed on the server.")
    return outcome(status, orjson.dumps(answer).decode())


def _call_outside(job: CronJob) -> Outcome:
    try:
        headers: dict[str, str] = (
            orjson.loads(unseal(job.headers_sealed)) if job.headers_sealed else {}
        )
    except Unsealable as error:
        return Outcome(None, f"Not sent: {error}", 0)
    body: bytes | None = None
    if job.body:
        body = body_bytes(job.body_value)
        headers = {"Content-Type": "application/json", **headers}
    answer = destinations.send(job.method, job.endpoint, body, headers, user_agent=USER_AGENT)
    return Outcome(answer.status, answer.error or answer.body, answer.duration_ms)


def due_jobs(
    *, now: datetime, limit: int = BATCH, skip: set[str] | frozenset[str] = frozenset()
) -> list[CronJob]:
    """Enabled jobs due at `now`, the longest-waiting first."""
    return list(
        CronJob.objects.filter(enabled=True, next_run_at__lte=now)
        .exclude(pk__in=skip)
        .select_related("mind")
        .order_by("next_run_at", "pk")[:limit]
    )


def next_due(*, now: datetime, within: timedelta) -> datetime | None:
    """The soonest due time of an enabled job after `now` and within `within`, if any."""
    return (
        CronJob.objects.filter(enabled=True, next_run_at__gt=now, next_run_at__lte=now + within)
        .order_by("next_run_at")
        .values_list("next_run_at", flat=True)
        .first()
    )


def claim(job: CronJob, *, now: datetime) -> bool:
    """Take the job's due time `job.next_run_at`: move it to the next time after `now`,
    unless another worker (or a toggle) moved it first."""
    following = next_run(job.schedule, job.timezone, after=now)
    moved = CronJob.objects.filter(pk=job.pk, enabled=True, next_run_at=job.next_run_at).update(
        next_run_at=following
    )
    return moved == 1


def record(job: CronJob, *, due_at: datetime, now: datetime, outcome: Outcome) -> CronRun | None:
    """Record the run, the job's last_*, and the `cron.run` event, in one transaction.
    None when the job was deleted while it ran."""
    status = CronJob.Status.OK if outcome.ok else CronJob.Status.FAILED
    try:
        with transaction.atomic():
            if not CronJob.objects.filter(pk=job.pk).update(last_run_at=now, last_status=status):
                return None
            run = CronRun.objects.create(
                job=job,
                due_at=due_at,
                started_at=now,
                status=status,
                response_status=outcome.status,
                duration_ms=outcome.duration_ms,
                response_preview=outcome.text,
            )
            events.record(
                job.mind_id,
                [
                    (
                        "cron.run",
                        {
                            "job": {
                                "id": job.pk,
                                "name": job.name,
                                "endpoint": job.endpoint,
                                "method": job.method,
                            },
                            "run": run_to_dict(run),
                        },
                        "",
                    )
                ],
                now=now,
            )
    except IntegrityError:  # deleted between the update and the insert
        return None
    old = list(
        CronRun.objects.filter(job=job).values_list("pk", flat=True)[RUNS_MAX : RUNS_MAX + BATCH]
    )
    if old:
        CronRun.objects.filter(pk__in=old).delete()
    return run


def run_due(*, now: datetime | None = None) -> int:
    """Claim and run every job due at `now` (default: the clock's now); the runs made. Safe to
    call from any number of workers at once."""
    ran = 0
    seen: set[str] = set()
    while True:
        when = now or timezone.now()
        jobs = due_jobs(now=when, skip=seen)
        if not jobs:
            return ran
        for job in jobs:
            seen.add(job.pk)
            due_at = job.next_run_at
            if due_at is None or not claim(job, now=when):
                continue
            try:
                outcome = call(job)
            except Exception:  # a bug of this server's: recorded, and the tick goes on
                logger.exception("Cron job %s failed", job.pk)
                outcome = Outcome(None, "The run failed on the server.", 0)
            if record(job, due_at=due_at, now=when, outcome=outcome) is not None:
                ran += 1
