"""The admin's view of the scheduler: jobs with their recent runs (header values masked,
never in full), runs, the audit of job changes, and variables. Changes go through the
services, so they are audited and counted in the mind's quota."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from memories.actors import Actor
from scheduler import services
from scheduler.models import CronAudit, CronJob, CronRun, Variable

if TYPE_CHECKING:
    _JobAdminBase = admin.ModelAdmin[CronJob]
    _RunAdminBase = admin.ModelAdmin[CronRun]
    _AuditAdminBase = admin.ModelAdmin[CronAudit]
    _VariableAdminBase = admin.ModelAdmin[Variable]
    _RunInlineBase = admin.TabularInline[CronRun, CronJob]
else:
    _JobAdminBase = _RunAdminBase = _AuditAdminBase = _VariableAdminBase = admin.ModelAdmin
    _RunInlineBase = admin.TabularInline

# Runs shown on a job's page: the newest.
INLINE_RUNS = 20
RUN_FIELDS = ("due_at", "started_at", "status", "response_status", "duration_ms")
JOB_FIELDS = (
    "id",
    "mind",
    "name",
    "schedule",
    "timezone",
    "endpoint",
    "method",
    "headers_masked",
    "body",
    "enabled",
    "next_run_at",
    "last_run_at",
    "last_status",
    "created_at",
)
VARIABLE_FIELDS = ("mind", "key", "value", "created_at", "updated_at")


def _actor(request: HttpRequest) -> Actor:
    return Actor.for_user(request.user)


class RunInline(_RunInlineBase):
    model = CronRun
    fields = readonly_fields = (*RUN_FIELDS, "response_preview")
    can_delete = False
    extra = 0

    def get_queryset(self, request: HttpRequest) -> QuerySet[CronRun]:
        ids = list(super().get_queryset(request).values_list("pk", flat=True)[:INLINE_RUNS])
        return super().get_queryset(request).filter(pk__in=ids)

    def has_add_permission(self, request: HttpRequest, obj: CronJob | None = None) -> bool:
        return False


@admin.register(CronJob)
class CronJobAdmin(_JobAdminBase):
    list_display = [
        *("name", "id", "mind", "schedule", "endpoint"),
        *("enabled", "next_run_at", "last_status"),
    ]
    list_filter = ["enabled", "last_status", "method"]
    search_fields = ["id", "name", "endpoint", "mind__id", "mind__name", "mind__owner__email"]
    list_select_related = ["mind"]
    # Changed only through the actions, which use the services.
    fields = readonly_fields = JOB_FIELDS
    inlines = [RunInline]
    actions = ["enable", "disable", "delete_jobs"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by the mind's agent or a person who may write the mind

    def has_delete_permission(self, request: HttpRequest, obj: CronJob | None = None) -> bool:
        return False  # the delete_jobs action, audited

    @admin.display(description="headers (values masked)")
    def headers_masked(self, job: CronJob) -> str:
        return ", ".join(f"{name}: {value}" for name, value in job.headers_masked.items()) or "-"

    @admin.action(description="Enable the selected jobs (from their next time)")
    def enable(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        for job in queryset:
            services.cron_set_enabled(job=job, enabled=True, actor=_actor(request))
        messages.success(request, f"Enabled {len(queryset)} cron jobs.")

    @admin.action(description="Disable the selected jobs")
    def disable(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        for job in queryset:
            services.cron_set_enabled(job=job, enabled=False, actor=_actor(request))
        messages.success(request, f"Disabled {len(queryset)} cron jobs.")

    @admin.action(description="Delete the selected jobs and their runs")
    def delete_jobs(self, request: HttpRequest, queryset: QuerySet[CronJob]) -> None:
        count = 0
        for job in queryset:
            services.cron_delete(job=job, actor=_actor(request))
            count += 1
        messages.success(request, f"Deleted {count} cron jobs.")


@admin.register(CronRun)
class CronRunAdmin(_RunAdminBase):
    list_display = ["job", *RUN_FIELDS]
    list_filter = ["status", "started_at"]
    search_fields = ["job__id", "job__name", "job__mind__id"]
    list_select_related = ["job"]
    fields = readonly_fields = ("job", *RUN_FIELDS, "response_preview")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: CronRun | None = None) -> bool:
        return False


@admin.register(CronAudit)
class CronAuditAdmin(_AuditAdminBase):
    list_display = ["at", "action", "job_name", "job_id", "mind", "actor_type", "actor"]
    list_filter = ["action", "actor_type", "at"]
    search_fields = ["job_id", "job_name", "actor", "mind__id"]
    list_select_related = ["mind"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: CronAudit | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: CronAudit | None = None) -> bool:
        return False


@admin.register(Variable)
class VariableAdmin(_VariableAdminBase):
    list_display = ["key", "mind", "updated_at"]
    search_fields = ["key", "mind__id", "mind__name"]
    list_select_related = ["mind"]
    fields = readonly_fields = VARIABLE_FIELDS
    actions = ["delete_variables"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # set by the mind's agent or a person: counted in its quota

    def has_change_permission(self, request: HttpRequest, obj: Variable | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Variable | None = None) -> bool:
        return False  # the delete_variables action, which gives the bytes back

    @admin.action(description="Delete the selected variables")
    def delete_variables(self, request: HttpRequest, queryset: QuerySet[Variable]) -> None:
        count = 0
        for variable in queryset:
            services.variable_delete(variable=variable)
            count += 1
        messages.success(request, f"Deleted {count} variables.")
