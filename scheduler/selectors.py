"""Reads of the scheduler, each scoped by the mind it is given, and the one place a job, a
run and a variable become JSON."""

from __future__ import annotations

from typing import Any

from core.errors import NotFound
from memories.fields import iso
from minds.models import Mind
from scheduler.models import CronJob, CronRun, Variable

RUNS_DEFAULT = 50
RUNS_MAX = 100  # also how many runs of a job are kept


def job_to_dict(job: CronJob) -> dict[str, Any]:
    """A job as every face shows it: header values masked, never in full."""
    return {
        "id": job.pk,
        "name": job.name,
        "schedule": job.schedule,
        "timezone": job.timezone,
        "endpoint": job.endpoint,
        "method": job.method,
        "headers": dict(job.headers_masked),
        "body": job.body_value,
        "enabled": job.enabled,
        "last_run_at": iso(job.last_run_at),
        "last_status": job.last_status or None,
        "next_run_at": iso(job.next_run_at),
        "created_at": iso(job.created_at),
    }


def run_to_dict(run: CronRun) -> dict[str, Any]:
    return {
        "started_at": iso(run.started_at),
        "status": run.status,
        "response_status": run.response_status,
        "duration_ms": run.duration_ms,
        "response_preview": run.response_preview,
    }


def variable_to_dict(variable: Variable) -> dict[str, Any]:
    return {"key": variable.key, "value": variable.value, "updated_at": iso(variable.updated_at)}


def cron_list(*, mind: Mind) -> list[CronJob]:
    """The mind's jobs, oldest first."""
    return list(CronJob.objects.filter(mind=mind))


def cron_get(*, mind: Mind, job_id: str) -> CronJob:
    """The mind's job `job_id`; NotFound for any other."""
    job = CronJob.objects.filter(mind=mind, pk=job_id).first()
    if job is None:
        raise NotFound("No such cron job in this mind.")
    return job


def cron_runs(*, job: CronJob, limit: int = RUNS_DEFAULT) -> tuple[list[CronRun], int]:
    """The job's most recent runs, newest first, and how many are kept."""
    runs = CronRun.objects.filter(job=job)
    return list(runs[:limit]), runs.count()


def variable_list(*, mind: Mind) -> list[Variable]:
    """The mind's variables, by key."""
    return list(Variable.objects.filter(mind=mind))


def variable_get(*, mind: Mind, key: str) -> Variable:
    """The mind's variable `key`; NotFound when it has none."""
    variable = Variable.objects.filter(mind=mind, key=key).first() if "\x00" not in key else None
    if variable is None:
        raise NotFound(f"This mind has no variable {key[:200]!r}.")
    return variable
