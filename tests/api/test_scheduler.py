"""/cron and /var (../shared/API.md section 9.9): a mind's cron jobs, their runs, and its
variables, for its agent or a person who may reach the mind."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler.models import CronAudit, CronJob
from scheduler.runner import run_due
from tests.api.memory_helpers import assert_invalid
from tests.conftest import bearer_client, jwt_for
from tests.factories import remember, share_make

pytestmark = pytest.mark.django_db

CONTRADICTIONS = {
    "name": "contradictions",
    "schedule": "*/10 * * * *",
    "endpoint": "/memory/contradictions?within=30d",
}
COMPACT = {
    "name": "tidy",
    "schedule": "0 3 * * *",
    "timezone": "Europe/Berlin",
    "endpoint": "/memory/compact",
    "method": "POST",
    "body": {"older_than": 0, "dry_run": True},
}
JOB_FIELDS = {
    "id",
    "name",
    "schedule",
    "timezone",
    "endpoint",
    "method",
    "headers",
    "body",
    "enabled",
    "last_run_at",
    "last_status",
    "next_run_at",
    "created_at",
}


def create(client, body: dict, **params) -> dict:
    response = client.post("/cron" + _query(params), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _query(params: dict) -> str:
    return "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""


# --- Cron jobs ---------------------------------------------------------------------------------


def test_create_list_toggle_delete(agent):
    job = create(agent, COMPACT)
    assert set(job) == JOB_FIELDS
    assert job["id"].startswith("cron_")
    assert (job["method"], job["timezone"], job["enabled"]) == ("POST", "Europe/Berlin", True)
    assert job["body"] == {"older_than": 0, "dry_run": True}
    assert job["next_run_at"].endswith("Z") and job["last_status"] is None

    listed = agent.get("/cron").json()
    assert listed["total"] == 1 and listed["crons"][0]["id"] == job["id"]

    off = agent.post(f"/cron/{job['id']}/toggle").json()
    assert off["enabled"] is False and off["next_run_at"] is None
    on = agent.post(f"/cron/{job['id']}/toggle/").json()
    assert on["enabled"] is True and on["next_run_at"]

    assert agent.delete(f"/cron/{job['id']}").json() == {"deleted": True, "id": job["id"]}
    assert agent.get("/cron").json() == {"crons": [], "total": 0}
    assert agent.delete(f"/cron/{job['id']}").status_code == 404
    actions = CronAudit.objects.order_by("at", "id").values_list("action", flat=True)
    assert list(actions) == ["create", "disable", "enable", "delete"]


def test_runs_are_listed_newest_first(agent, mind):
    remember(mind, content="The office is in Berlin")
    job = create(agent, CONTRADICTIONS)
    CronJob.objects.filter(pk=job["id"]).update(next_run_at=timezone.now() - timedelta(minutes=1))
    assert run_due() == 1
    runs = agent.get(f"/cron/{job['id']}/runs").json()
    assert runs["total"] == 1
    (run,) = runs["runs"]
    assert set(run) == {
        "started_at",
        "status",
        "response_status",
        "duration_ms",
        "response_preview",
    }
    assert (run["status"], run["response_status"]) == ("ok", 200)
    assert run["response_preview"].startswith('{"contradictions":')
    listed = agent.get("/cron").json()["crons"][0]
    assert listed["last_status"] == "ok" and listed["last_run_at"]
    assert_invalid(agent.get(f"/cron/{job['id']}/runs?limit=0"), "limit")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**CONTRADICTIONS, "schedule": "every day"}, "schedule"),
        ({**CONTRADICTIONS, "schedule": "* * * *"}, "schedule"),
        ({**CONTRADICTIONS, "timezone": "Nowhere/Town"}, "timezone"),
        ({**CONTRADICTIONS, "endpoint": "/minds"}, "endpoint"),
        ({**CONTRADICTIONS, "endpoint": "http://example.com/"}, "endpoint"),
        ({**CONTRADICTIONS, "endpoint": "https://127.0.0.1/in"}, "endpoint"),
        ({**CONTRADICTIONS, "method": "BREW"}, "method"),
        ({**COMPACT, "headers": {"X-Key": "v"}}, "headers"),
        ({**COMPACT, "body": "not json"}, "body"),
        ({**CONTRADICTIONS, "name": ""}, "name"),
        ({**CONTRADICTIONS, "id": "cron_mine"}, "id"),
        ({**CONTRADICTIONS, "enabled": "no"}, "enabled"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(agent, body, field, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    body = assert_invalid(agent.post("/cron", body, format="json"), field)
    assert body["fields"][field][0]


def test_a_bad_schedule_says_why(agent):
    body = assert_invalid(
        agent.post("/cron", {**CONTRADICTIONS, "schedule": "0 0 30 2 *"}, format="json"),
        "schedule",
    )
    assert "never fires" in body["fields"]["schedule"][0]


def test_headers_are_shown_back_masked(agent, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    job = create(
        agent,
        {
            "name": "report",
            "schedule": "0 * * * *",
            "endpoint": "https://203.0.113.9/in",
            "method": "POST",
            "headers": {"Authorization": "Bearer sk-0123456789abcdef", "X-Short": "abc"},
            "body": "hello",
        },
    )
    assert job["headers"] == {"Authorization": "****cdef", "X-Short": "****"}
    listed = agent.get("/cron").content.decode()
    assert "0123456789" not in listed


def test_other_minds_get_404(agent, stranger_agent, other_human, mind):
    job = create(agent, CONTRADICTIONS)
    for path in (f"/cron/{job['id']}/runs", "/var/shared_key"):
        assert stranger_agent.get(path).status_code == 404
    assert stranger_agent.post(f"/cron/{job['id']}/toggle").status_code == 404
    assert stranger_agent.delete(f"/cron/{job['id']}").status_code == 404
    assert stranger_agent.get("/cron").json()["total"] == 0
    assert other_human.get(f"/cron?mind={mind.pk}").status_code == 404
    assert other_human.get(f"/var?mind={mind.pk}").status_code == 404
    assert stranger_agent.get(f"/cron?mind={mind.pk}").status_code == 400
    assert CronJob.objects.get().enabled


def test_a_reader_lists_and_a_writer_changes(agent, mind, other_user):
    job = create(agent, CONTRADICTIONS)
    agent.post("/var", {"key": "k", "value": "v"}, format="json")
    share = share_make(mind, other_user, acl="read")
    reader = bearer_client(jwt_for(other_user))
    q = f"?mind={mind.pk}"
    assert reader.get("/cron" + q).json()["total"] == 1
    assert reader.get(f"/cron/{job['id']}/runs" + q).status_code == 200
    assert reader.get("/var/k" + q).json()["value"] == "v"
    assert reader.post("/cron" + q, CONTRADICTIONS, format="json").status_code == 403
    assert reader.post(f"/cron/{job['id']}/toggle" + q).status_code == 403
    assert reader.post("/var" + q, {"key": "k", "value": "w"}, format="json").status_code == 403
    assert reader.delete("/var/k" + q).status_code == 403
    share.acl = "write"
    share.save()
    assert reader.post(f"/cron/{job['id']}/toggle" + q).status_code == 200
    assert reader.post("/var" + q, {"key": "k", "value": "w"}, format="json").status_code == 200


def test_the_owner_in_person_needs_no_mind_param(human):
    assert create(human, CONTRADICTIONS)["enabled"] is True
    assert CronAudit.objects.get().actor == "owner@example.com"


# --- Variables ---------------------------------------------------------------------------------


def test_variables_upsert_get_list_delete(agent):
    created = agent.post("/var", {"key": "last.run", "value": "2026-03-01"}, format="json")
    assert created.status_code == 201
    assert set(created.json()) == {"key", "value", "updated_at"}
    updated = agent.post("/var", {"key": "last.run", "value": "2026-03-02"}, format="json")
    assert updated.status_code == 200 and updated.json()["value"] == "2026-03-02"
    agent.post("/var", {"key": "a_first", "value": ""}, format="json")
    listed = agent.get("/var").json()
    assert listed["total"] == 2
    assert [v["key"] for v in listed["variables"]] == ["a_first", "last.run"]
    assert agent.get("/var/last.run").json()["value"] == "2026-03-02"
    assert agent.get("/var/last.run/").json()["value"] == "2026-03-02"
    assert agent.delete("/var/last.run").json() == {"deleted": True, "key": "last.run"}
    assert agent.get("/var/last.run").status_code == 404
    assert agent.delete("/var/last.run").status_code == 404


def test_variable_keys_may_hold_slashes(agent):
    agent.post("/var", {"key": "path/to/it", "value": "x"}, format="json")
    assert agent.get("/var/path/to/it").json()["key"] == "path/to/it"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"key": "has space", "value": "x"}, "key"),
        ({"value": "x"}, "key"),
        ({"key": "k"}, "value"),
        ({"key": "k", "value": None}, "value"),
        ({"key": "k", "value": ["x"]}, "value"),
        ({"key": "k", "value": "x" * (64 * 1024 + 1)}, "value"),
        ({"key": "k", "value": "x", "extra": 1}, "extra"),
    ],
)
def test_bad_variables_are_a_400_naming_the_field(agent, body, field):
    assert_invalid(agent.post("/var", body, format="json"), field)


def test_variables_past_the_quota_are_a_409(agent, settings):
    settings.SYNAPSE_MAX_MIND_BYTES = 10
    refused = agent.post("/var", {"key": "k", "value": "x" * 20}, format="json")
    assert refused.status_code == 409, refused.content
    assert refused.json()["error"] == "quota_exceeded"
    assert agent.get("/var").json()["total"] == 0
