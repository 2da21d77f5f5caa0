"""scheduler/services.py: jobs created, toggled and deleted (audited, headers sealed) and
variables set and deleted (counted in the mind's quota)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from core.errors import QuotaExceeded
from core.sealed import unseal
from minds.models import Mind
from scheduler import services
from scheduler.models import CronAudit, CronJob, Variable
from tests.factories import AGENT, PERSON, remember

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 1, 10, 7, 30, tzinfo=UTC)
OUTSIDE = "https://203.0.113.9/in"


def test_a_job_is_due_at_its_next_time_and_its_headers_are_sealed(mind, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    token = "Bearer 0123456789abcdef"
    job = services.cron_create(
        mind=mind,
        body={
            "name": "ping",
            "schedule": "*/15 * * * *",
            "endpoint": OUTSIDE,
            "method": "POST",
            "headers": {"Authorization": token},
        },
        actor=AGENT,
        now=NOW,
    )
    assert job.next_run_at == datetime(2026, 3, 1, 10, 15, tzinfo=UTC)
    assert token not in job.headers_sealed
    assert orjson.loads(unseal(job.headers_sealed)) == {"Authorization": token}
    assert job.headers_masked == {"Authorization": "****cdef"}
    audit = CronAudit.objects.get()
    assert (audit.action, audit.job_id, audit.actor) == ("create", job.pk, AGENT.name)


def test_toggle_flips_enabled_and_skips_what_was_missed(mind):
    body = {"name": "tidy", "schedule": "0 * * * *", "endpoint": "/memory/compact"}
    job = services.cron_create(mind=mind, body={**body, "method": "POST"}, actor=PERSON, now=NOW)
    job = services.cron_toggle(job=job, actor=PERSON, now=NOW)
    assert (job.enabled, job.next_run_at) == (False, None)
    later = NOW + timedelta(hours=5)
    job = services.cron_toggle(job=job, actor=PERSON, now=later)
    assert job.enabled and job.next_run_at == datetime(2026, 3, 1, 16, 0, tzinfo=UTC)
    services.cron_delete(job=job, actor=PERSON)
    assert not CronJob.objects.exists()
    assert list(CronAudit.objects.order_by("at", "id").values_list("action", flat=True)) == [
        "create",
        "disable",
        "enable",
        "delete",
    ]


def test_a_mind_has_a_limited_number_of_jobs(mind, monkeypatch):
    monkeypatch.setattr(services, "MAX_JOBS_PER_MIND", 1)
    body = {"name": "a", "schedule": "* * * * *", "endpoint": "/memory/contradictions"}
    services.cron_create(mind=mind, body=body, actor=AGENT)
    with pytest.raises(QuotaExceeded):
        services.cron_create(mind=mind, body=body, actor=AGENT)


def test_variables_are_upserted_and_counted_in_the_quota(mind, settings):
    remember(mind, content="0123456789")  # 10 bytes of memory content
    variable, created = services.variable_set(mind=mind, body={"key": "k", "value": "abc"})
    assert created
    assert Mind.objects.get(pk=mind.pk).stored_bytes == 10 + 4
    variable, created = services.variable_set(mind=mind, body={"key": "k", "value": "abcdef"})
    assert not created and variable.value == "abcdef"
    assert Mind.objects.get(pk=mind.pk).stored_bytes == 10 + 7

    settings.SYNAPSE_MAX_MIND_BYTES = 20
    with pytest.raises(QuotaExceeded, match="memories and variables"):
        services.variable_set(mind=mind, body={"key": "k2", "value": "x" * 5})
    assert not Variable.objects.filter(key="k2").exists()
    # Shrinking is never refused; deleting gives the bytes back.
    services.variable_set(mind=mind, body={"key": "k", "value": "a"})
    services.variable_delete(variable=Variable.objects.get(key="k"))
    assert Mind.objects.get(pk=mind.pk).stored_bytes == 10
