"""GET /health/ready: 200 when the database answers, every migration is applied and (with
search by meaning on) a background worker was heard from lately; otherwise 503 naming each
check that failed. GET /health stays the cheap liveness answer."""

from __future__ import annotations

import time

import pytest
from django.db import OperationalError, connections
from django.db.migrations.recorder import MigrationRecorder
from huey.contrib.djhuey import HUEY

from memories.tasks import HEARTBEAT_KEY, WORKER_SEEN_WITHIN, beat
from synapse_site import readiness
from tests.reliability.harness import GunicornServer

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    # As a process that has not looked at its migrations yet, and no worker heard from.
    monkeypatch.setattr(readiness, "_migrations_applied", False)
    HUEY.delete(HEARTBEAT_KEY)
    yield
    HUEY.delete(HEARTBEAT_KEY)


def assert_not_ready(response, *failed: str) -> dict:
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "unavailable"
    assert body["failed"] == list(failed)
    for name in failed:
        assert f"{name}: {body['checks'][name]}" in body["detail"]
    return body


def test_ready_when_the_database_migrations_and_worker_are(anon):
    beat()
    response = anon.get("/health/ready")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "worker": "ok"},
    }


def test_the_migration_plan_is_read_once_then_each_check_is_one_query(
    anon, django_assert_num_queries
):
    beat()
    assert anon.get("/health/ready").status_code == 200
    with django_assert_num_queries(1):  # SELECT 1; the plan is known to be empty
        assert anon.get("/health/ready").status_code == 200


def test_not_ready_without_a_database(anon, monkeypatch):
    beat()

    def refused(*args, **kwargs):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(connections["default"], "cursor", refused)
    body = assert_not_ready(anon.get("/health/ready"), "database", "migrations")
    assert body["checks"]["database"] == "the database does not answer"
    assert body["checks"]["worker"] == "ok"


def test_not_ready_while_a_migration_is_not_applied(anon):
    beat()
    latest = MigrationRecorder.Migration.objects.filter(app="memories").order_by("-id").first()
    latest.delete()  # as if the code were newer than the database (rolled back after the test)
    body = assert_not_ready(anon.get("/health/ready"), "migrations")
    assert body["checks"]["migrations"] == "1 not applied (run manage.py migrate)"


def test_not_ready_before_any_worker_ran(anon):
    body = assert_not_ready(anon.get("/health/ready"), "worker")
    assert "no background worker has run" in body["checks"]["worker"]
    assert body["checks"]["database"] == "ok"


def test_a_failed_probe_is_one_warning_naming_why_not_an_error(anon, caplog):
    with caplog.at_level("INFO"):
        assert_not_ready(anon.get("/health/ready"), "worker")
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "django.request"]
    assert len(logged) == 1, logged
    level, message = logged[0]
    assert level == "WARNING"
    assert message.startswith("Not ready: worker: no background worker has run")


def test_not_ready_when_the_worker_went_quiet(anon):
    beat(now=time.time() - WORKER_SEEN_WITHIN - 30)
    body = assert_not_ready(anon.get("/health/ready"), "worker")
    assert "no background worker heard from for" in body["checks"]["worker"]
    beat()
    assert anon.get("/health/ready").status_code == 200


def test_not_ready_when_the_task_queue_does_not_answer(anon, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(HUEY, "get", down)
    body = assert_not_ready(anon.get("/health/ready"), "worker")
    assert body["checks"]["worker"] == "the background worker's task queue does not answer"


def test_no_worker_is_needed_with_embeddings_off(anon, settings):
    settings.SYNAPSE_EMBEDDINGS = "off"
    response = anon.get("/health/ready")
    assert response.status_code == 200
    assert response.json()["checks"]["worker"] == "not needed: SYNAPSE_EMBEDDINGS is off"


def test_readiness_takes_no_credentials_and_is_never_throttled(anon, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": "1/min", "login": None},
    }
    beat()
    statuses = [
        anon.get("/health/ready", HTTP_AUTHORIZATION="Bearer mk_wrong").status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 200]


@pytest.mark.slow
def test_a_real_worker_makes_the_server_ready(tmp_path):
    from tests.reliability.test_embedding_worker import Worker

    server = GunicornServer(tmp_path, workers=1)
    server.manage("migrate", "--noinput")
    server.start()
    worker = Worker(server)
    try:
        client = server.client()
        reply = client.request("GET", "/health/ready")
        assert reply.status == 503, reply.body
        assert reply.json()["failed"] == ["worker"]
        assert client.request("GET", "/health").status == 200  # alive all along
        worker.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            reply = client.request("GET", "/health/ready")
            if reply.status == 200:
                break
            time.sleep(0.2)
        assert reply.status == 200, (reply.body, worker.log())
        client.close()
    finally:
        if worker.process is not None:
            worker.kill()
        server.stop()
