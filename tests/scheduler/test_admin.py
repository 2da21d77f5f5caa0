"""The admin shows jobs (header values masked), runs, the audit and variables; its actions
go through the services, so they are audited and counted in the quota."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from minds.models import Mind
from scheduler.models import CronAudit, CronJob, Variable
from scheduler.runner import run_due
from scheduler.services import cron_create, variable_set
from tests.factories import AGENT

pytestmark = pytest.mark.django_db

TOKEN = "Bearer sk-live-0123456789abcdef"


@pytest.fixture
def job(mind, settings) -> CronJob:
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    body = {
        "name": "report",
        "schedule": "0 * * * *",
        "endpoint": "https://203.0.113.9/in",
        "method": "POST",
        "headers": {"Authorization": TOKEN},
    }
    return cron_create(mind=mind, body=body, actor=AGENT)


def test_pages_show_jobs_runs_and_variables_never_a_header_in_full(admin_client, job, mind):
    local = cron_create(
        mind=mind,
        body={"name": "look", "schedule": "* * * * *", "endpoint": "/memory/contradictions"},
        actor=AGENT,
    )
    CronJob.objects.filter(pk=local.pk).update(next_run_at=timezone.now() - timedelta(minutes=1))
    run_due()
    variable_set(mind=mind, body={"key": "greeting", "value": "hello"})
    for path in (
        "/admin/scheduler/cronjob/",
        f"/admin/scheduler/cronjob/{job.pk}/change/",
        f"/admin/scheduler/cronjob/{local.pk}/change/",
        "/admin/scheduler/cronrun/",
        "/admin/scheduler/cronaudit/",
        "/admin/scheduler/variable/",
    ):
        page = admin_client.get(path)
        html = page.content.decode()
        assert page.status_code == 200, path
        assert "0123456789" not in html and job.headers_sealed not in html, path
    assert (
        "****cdef"
        in admin_client.get(f"/admin/scheduler/cronjob/{job.pk}/change/").content.decode()
    )
    assert "greeting" in admin_client.get("/admin/scheduler/variable/").content.decode()


def test_the_actions_are_audited(admin_client, job):
    admin_client.post(
        "/admin/scheduler/cronjob/", {"action": "disable", "_selected_action": [job.pk]}
    )
    job.refresh_from_db()
    assert not job.enabled and job.next_run_at is None
    admin_client.post(
        "/admin/scheduler/cronjob/", {"action": "enable", "_selected_action": [job.pk]}
    )
    admin_client.post(
        "/admin/scheduler/cronjob/", {"action": "delete_jobs", "_selected_action": [job.pk]}
    )
    assert not CronJob.objects.exists()
    audit = list(CronAudit.objects.order_by("at", "id").values_list("action", "actor"))
    assert audit[1:] == [
        ("disable", "admin@example.com"),
        ("enable", "admin@example.com"),
        ("delete", "admin@example.com"),
    ]


def test_deleting_variables_gives_their_bytes_back(admin_client, mind):
    variable, _ = variable_set(mind=mind, body={"key": "k", "value": "x" * 100})
    assert Mind.objects.get(pk=mind.pk).stored_bytes == 101
    admin_client.post(
        "/admin/scheduler/variable/",
        {"action": "delete_variables", "_selected_action": [variable.pk]},
    )
    assert not Variable.objects.exists()
    assert Mind.objects.get(pk=mind.pk).stored_bytes == 0
