"""Writes of the scheduler: cron jobs (audited) and variables (counted in the mind's quota).
Bodies are judged by scheduler/rules.py whatever face they came through."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from django.db import transaction
from django.utils import timezone

from core.errors import QuotaExceeded
from core.sealed import seal
from memories.actors import Actor
from memories.services import storage_charge
from minds.models import Mind
from scheduler.models import CronAudit, CronJob, Variable
from scheduler.rules import (
    MAX_JOBS_PER_MIND,
    cron_body_clean,
    mask,
    next_run,
    variable_body_clean,
    variable_size,
)

Action = CronAudit.Action


def _audit(job: CronJob, action: str, actor: Actor, now: datetime) -> None:
    CronAudit.objects.create(
        mind_id=job.mind_id,
        job_id=job.pk,
        job_name=job.name,
        action=action,
        actor_type=actor.kind,
        actor=actor.name[:254],
        at=now,
    )


def cron_create(*, mind: Mind, body: Any, actor: Actor, now: datetime | None = None) -> CronJob:
    """A new job from a body (rules.cron_body_clean), due at its schedule's next time when
    enabled; audited. QuotaExceeded past MAX_JOBS_PER_MIND."""
    spec = cron_body_clean(body)
    now = now or timezone.now()
    with transaction.atomic():
        if CronJob.objects.filter(mind=mind).count() >= MAX_JOBS_PER_MIND:
            raise QuotaExceeded(
                f"A mind may have at most {MAX_JOBS_PER_MIND} cron jobs: delete one first."
            )
        job = CronJob.objects.create(
            mind=mind,
            name=spec.name,
            schedule=spec.schedule,
            timezone=spec.timezone,
            endpoint=spec.endpoint,
            method=spec.method,
            headers_sealed=seal(orjson.dumps(spec.headers).decode()) if spec.headers else "",
            headers_masked={name: mask(value) for name, value in spec.headers.items()},
            body=orjson.dumps(spec.body).decode() if spec.body is not None else "",
            enabled=spec.enabled,
            next_run_at=next_run(spec.schedule, spec.timezone, after=now) if spec.enabled else None,
            created_at=now,
        )
        _audit(job, Action.CREATE, actor, now)
    return job


def cron_delete(*, job: CronJob, actor: Actor, now: datetime | None = None) -> None:
    """Delete the job and its runs; audited."""
    with transaction.atomic():
        _audit(job, Action.DELETE, actor, now or timezone.now())
        job.delete()


def cron_toggle(*, job: CronJob, actor: Actor, now: datetime | None = None) -> CronJob:
    """Flip `enabled`: an enabled job is next due at its schedule's next time from now (what
    it missed while disabled is not run); audited. Returns the job as stored."""
    now = now or timezone.now()
    with transaction.atomic():
        job = CronJob.objects.select_for_update().get(pk=job.pk)
        job.enabled = not job.enabled
        job.next_run_at = next_run(job.schedule, job.timezone, after=now) if job.enabled else None
        job.save(update_fields=["enabled", "next_run_at"])
        _audit(job, Action.ENABLE if job.enabled else Action.DISABLE, actor, now)
    return job


def cron_set_enabled(
    *, job: CronJob, enabled: bool, actor: Actor, now: datetime | None = None
) -> CronJob:
    """Enable or disable the job (the admin's actions); nothing when it already is."""
    if job.enabled == enabled:
        return job
    return cron_toggle(job=job, actor=actor, now=now)


def variable_set(*, mind: Mind, body: Any, now: datetime | None = None) -> tuple[Variable, bool]:
    """Create or replace the variable a body names (rules.variable_body_clean); its bytes are
    counted in the mind's storage quota (QuotaExceeded past it, nothing written). Returns the
    variable and whether it was created."""
    key, value = variable_body_clean(body)
    now = now or timezone.now()
    with transaction.atomic():
        # The mind's row first: one writer of its variables at a time, so the create below
        # never meets a row another writer inserted meanwhile.
        Mind.objects.select_for_update().filter(pk=mind.pk).values_list("pk").first()
        variable = Variable.objects.filter(mind=mind, key=key).first()
        before = variable_size(key, variable.value) if variable is not None else 0
        storage_charge(mind.pk, size=variable_size(key, value) - before)
        if variable is None:
            variable = Variable.objects.create(
                mind=mind, key=key, value=value, created_at=now, updated_at=now
            )
            return variable, True
        variable.value, variable.updated_at = value, now
        variable.save(update_fields=["value", "updated_at"])
        return variable, False


def variable_delete(*, variable: Variable) -> None:
    """Delete the variable and give its bytes back to the mind's quota."""
    with transaction.atomic():
        if Variable.objects.filter(pk=variable.pk).delete()[0]:
            storage_charge(variable.mind_id, size=-variable_size(variable.key, variable.value))
