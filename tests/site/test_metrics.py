"""GET /metrics: off unless SYNAPSE_METRICS_TOKEN is set, then behind that Bearer token; the
Prometheus text format, read back with the client library's own parser.

Requests are counted by route name (never the raw path), method and status, with a latency
histogram; 429s (rate limits and the login lockout) and database errors have counters of
their own; users, minds, memories and pending embeddings are read from the database. With
gunicorn's workers, a scrape answered by any of them covers all of them.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from django.db import OperationalError
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from memories.models import EmbeddingJob, Memory
from minds.models import Mind
from tests.factories import PASSWORD
from tests.reliability.harness import GunicornServer

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-" + "x" * 20


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """{(sample name, labels): value} of a scrape."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict, name: str, **labels: str) -> float:
    return scraped.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def metrics_on(settings):
    settings.SYNAPSE_METRICS_TOKEN = TOKEN


def scrape(client=None) -> dict[tuple[str, frozenset], float]:
    response = (client or APIClient()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(response.content.decode())


def test_metrics_are_a_404_when_no_token_is_set(anon, settings):
    settings.SYNAPSE_METRICS_TOKEN = ""
    response = anon.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_metrics_need_the_token(anon, agent, metrics_on):
    response = anon.get("/metrics")
    assert response.status_code == 401
    assert response.json()["error"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")
    for wrong in (TOKEN + "x", TOKEN[:-1], "", "mk_" + TOKEN):
        response = anon.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {wrong}")
        assert response.status_code == 401
        assert response.json()["error"] in {"authentication_failed", "not_authenticated"}
    assert agent.get("/metrics").status_code == 401  # a Mind Key is not the metrics token
    assert anon.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_requests_are_counted_by_route_name_method_and_status(agent, anon, mind, metrics_on):
    memory = Memory.objects.create(mind=mind, category="fact", key="k", content="x")
    before = scrape()
    assert agent.get(f"/memory/{memory.pk}").status_code == 200
    assert agent.get("/memory/mem_nosuchthing").status_code == 404
    assert agent.get("/memory").status_code == 200
    assert anon.get("/no/such/path").status_code == 404
    assert anon.generic("BREW", "/health").status_code == 405
    after = scrape()

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    total = "synapse_http_requests_total"
    assert grew(total, endpoint="memory-detail", method="GET", status="200") == 1
    assert grew(total, endpoint="memory-detail", method="GET", status="404") == 1
    assert grew(total, endpoint="memory-list", method="GET", status="200") == 1
    assert grew(total, endpoint="unmatched", method="GET", status="404") == 1
    assert grew(total, endpoint="health", method="other", status="405") == 1
    latency = "synapse_http_request_duration_seconds"
    assert grew(f"{latency}_count", endpoint="memory-detail", method="GET") == 2
    assert grew(f"{latency}_bucket", endpoint="memory-detail", method="GET", le="+Inf") == 2
    labels = {dict(key[1]).get("endpoint") for key in after if key[0] == total}
    assert not any(memory.pk in label or "/" in label for label in labels)


def test_stored_figures_are_read_from_the_database(agent, mind, stranger_mind, metrics_on):
    for i in range(3):
        response = agent.post("/memory", {"category": "fact", "content": f"m{i}"}, format="json")
        assert response.status_code == 201
    memory = Memory.objects.filter(mind=mind).first()
    EmbeddingJob.objects.update_or_create(
        memory_id=memory.pk, defaults={"mind_id": mind.pk, "queued_at": memory.created_at}
    )
    scraped = scrape()
    assert value(scraped, "synapse_users") == 2
    assert value(scraped, "synapse_minds") == Mind.objects.count() == 2
    assert value(scraped, "synapse_memories") == Memory.objects.count() == 3
    assert value(scraped, "synapse_embeddings_pending") == EmbeddingJob.objects.count() >= 1
    assert value(scraped, "synapse_embeddings_parked") == 0
    EmbeddingJob.objects.filter(memory_id=memory.pk).update(due_at=None, attempts=5)
    scraped = scrape()
    assert value(scraped, "synapse_embeddings_parked") == 1
    assert value(scraped, "synapse_embeddings_pending") == EmbeddingJob.objects.count() - 1


def test_throttled_requests_and_lockouts_are_counted(anon, agent, owner, settings, metrics_on):
    before = scrape()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": "2/min", "login": None},
    }
    statuses = [agent.get("/memory").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    for _ in range(settings.AXES_FAILURE_LIMIT):
        anon.post("/login", {"email": owner.email, "password": "wrong"}, format="json")
    locked = anon.post("/login", {"email": owner.email, "password": PASSWORD}, format="json")
    assert locked.status_code == 429
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"credential": None, "login": None},
    }
    after = scrape()
    throttled = "synapse_http_throttled_requests_total"
    grew = value(after, throttled, endpoint="memory-list") - value(
        before, throttled, endpoint="memory-list"
    )
    assert grew == 1
    assert (
        value(after, throttled, endpoint="login") - value(before, throttled, endpoint="login") >= 2
    )


def test_database_errors_that_end_a_request_are_counted(monkeypatch, metrics_on):
    client = APIClient(raise_request_exception=False)
    before = value(scrape(), "synapse_database_errors_total")

    def database_down(self):
        raise OperationalError("connection refused")

    monkeypatch.setattr(type(Mind.objects), "exists", database_down)
    assert client.get("/health").status_code == 500

    def bug(self):
        raise RuntimeError("not a database error")

    monkeypatch.setattr(type(Mind.objects), "exists", bug)
    assert client.get("/health").status_code == 500
    monkeypatch.undo()
    assert value(scrape(), "synapse_database_errors_total") - before == 1


# --- Several gunicorn workers -----------------------------------------------------------------

REQUESTS = 20


def per_worker(directory: Path, tmp_path: Path) -> dict[str, float]:
    """{pid: guide requests} read from each worker's own counter file."""
    counts = {}
    for file in directory.glob("counter_*.db"):
        alone = tmp_path / file.stem
        alone.mkdir()
        shutil.copy(file, alone / file.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        scraped = {
            (s.name, frozenset(s.labels.items())): s.value
            for metric in registry.collect()
            for s in metric.samples
        }
        counts[file.stem.split("_")[-1]] = value(
            scraped, "synapse_http_requests_total", endpoint="guide", method="GET", status="200"
        )
    return counts


@pytest.mark.slow
def test_a_scrape_covers_every_gunicorn_worker(tmp_path):
    metrics_dir = tmp_path / "metrics"  # the default: metrics/ in the data directory
    metrics_dir.mkdir()
    (metrics_dir / "counter_1.db").write_bytes(b"a previous run's figures")
    server = GunicornServer(tmp_path, workers=2, env={"SYNAPSE_METRICS_TOKEN": TOKEN})
    server.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    server.manage("migrate", "--noinput")
    server.start()
    try:
        # One worker waits for the rest of a request's headers, so the other answers the next
        # requests; then the first one finishes its own: both have counted some.
        held = socket.create_connection(("127.0.0.1", server.port), timeout=20)
        held.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for _ in range(REQUESTS):
            client = server.client()
            assert client.request("GET", "/").status == 200
            client.close()
        held.sendall(b"\r\n")
        assert held.recv(100).startswith(b"HTTP/1.1 200")
        held.close()
        for _ in range(4):  # whichever worker answers the scrape
            client = server.client(token=TOKEN)
            reply = client.request("GET", "/metrics")
            client.close()
            assert reply.status == 200, reply.body
            scraped = samples(reply.body.decode())
            guide = value(
                scraped, "synapse_http_requests_total", endpoint="guide", method="GET", status="200"
            )
            assert guide == REQUESTS + 1
        counts = per_worker(metrics_dir, tmp_path)
        assert "1" not in counts  # the stale file was removed at start
        assert sorted(counts.values()) == [1, REQUESTS], counts
    finally:
        server.stop()
