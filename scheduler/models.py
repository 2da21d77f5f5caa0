"""The scheduler: a mind's cron jobs, each run of them, the audit of their changes, and the
mind's variables.

A job's `next_run_at` is its next due time; the tick (scheduler/runner.py) claims a due job by
moving it, so each due time runs once however many workers look.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.db import models
from django.utils.timezone import now as timezone_now

from memories.models import MAX_KEY_LENGTH
from synapse_site.ids import random_id
from webhooks.models import MAX_URL_LENGTH


def new_job_id() -> str:
    return random_id("cron_")


class CronJob(models.Model):
    class Status(models.TextChoices):
        OK = "ok"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=32, default=new_job_id, editable=False)
    mind = models.ForeignKey("minds.Mind", on_delete=models.CASCADE, related_name="cron_jobs")
    name = models.CharField(max_length=100)
    schedule = models.CharField(max_length=100)
    timezone = models.CharField(max_length=64, default="UTC")
    endpoint = models.CharField(max_length=MAX_URL_LENGTH)
    method = models.CharField(max_length=7, default="GET")
    # Sealed at rest (core/sealed.py): they may hold an outside service's credentials. The
    # masked copy is what is shown back.
    headers_sealed = models.TextField(blank=True, default="", editable=False)
    headers_masked = models.JSONField(default=dict, blank=True, editable=False)
    # What is sent, as JSON text (a string body is a JSON string): "" for none. Text, not a
    # JSON column, so any JSON is stored as given (PostgreSQL's jsonb refuses \u0000).
    body = models.TextField(blank=True, default="")
    enabled = models.BooleanField(default=True)
    # None while disabled.
    next_run_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_status = models.CharField(max_length=10, choices=Status.choices, blank=True, default="")
    created_at = models.DateTimeField(default=timezone_now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["mind", "created_at"], name="cron_mind_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.schedule})"

    @property
    def body_value(self) -> Any:
        """The body as it was given (a string, JSON, or None)."""
        return orjson.loads(self.body) if self.body else None


class CronRun(models.Model):
    job = models.ForeignKey(CronJob, on_delete=models.CASCADE, related_name="runs")
    # The due time this run served: one run per due time (also kept by the claim).
    due_at = models.DateTimeField()
    started_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=CronJob.Status.choices)
    response_status = models.IntegerField(null=True, blank=True)
    duration_ms = models.IntegerField(default=0)
    response_preview = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "due_at"], name="cron_run_once_per_due_time")
        ]

    def __str__(self) -> str:
        return f"{self.job_id} at {self.started_at:%Y-%m-%d %H:%M}: {self.status}"


class CronAudit(models.Model):
    """Who created, deleted, enabled or disabled a job, and when."""

    class Action(models.TextChoices):
        CREATE = "create"
        DELETE = "delete"
        ENABLE = "enable"
        DISABLE = "disable"

    mind = models.ForeignKey("minds.Mind", on_delete=models.CASCADE, related_name="+")
    job_id = models.CharField(max_length=32, db_index=True)
    job_name = models.CharField(max_length=100)
    action = models.CharField(max_length=10, choices=Action.choices)
    actor_type = models.CharField(max_length=10)
    actor = models.CharField(max_length=254)
    at = models.DateTimeField(default=timezone_now)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["mind", "at"], name="cron_audit_mind_at")]

    def __str__(self) -> str:
        return f"{self.action} {self.job_name} by {self.actor}"


class Variable(models.Model):
    mind = models.ForeignKey("minds.Mind", on_delete=models.CASCADE, related_name="variables")
    key = models.CharField(max_length=MAX_KEY_LENGTH)
    value = models.TextField()
    created_at = models.DateTimeField(default=timezone_now)
    updated_at = models.DateTimeField(default=timezone_now)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.UniqueConstraint(fields=["mind", "key"], name="variable_key_once_per_mind")
        ]

    def __str__(self) -> str:
        return self.key
