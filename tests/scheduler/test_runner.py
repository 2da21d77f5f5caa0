"""scheduler/runner.py: due jobs claimed in the database and run once per due time however
many workers tick, a missed job run once, runs recorded, local paths run as the mind's agent
and outside URLs called by the webhooks' sender (a loopback https server of the test's own;
private addresses refused without a connection)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.db import connections
from django.utils import timezone

from memories.models import MemoryEvent
from scheduler import runner, tasks
from scheduler.models import CronJob, CronRun
from scheduler.services import cron_create
from scheduler.tasks import cron_tick_at_start
from tests.factories import AGENT, remember
from webhooks import destinations
from webhooks.models import WebhookEvent
from webhooks.services import webhook_create

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EVERY_MINUTE = {"name": "look", "schedule": "* * * * *", "endpoint": "/memory/contradictions"}


def due(mind, body: dict = EVERY_MINUTE, *, at: datetime = T) -> CronJob:
    """A job of `body`, due at `at`."""
    job = cron_create(mind=mind, body=body, actor=AGENT, now=at - timedelta(minutes=1))
    CronJob.objects.filter(pk=job.pk).update(next_run_at=at)
    job.refresh_from_db()
    return job


# --- Claiming --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_workers_run_each_due_time_exactly_once(mind):
    jobs = [due(mind, {**EVERY_MINUTE, "name": f"job {i}"}) for i in range(4)]
    barrier = threading.Barrier(2)
    ran: list[int] = []
    errors: list[BaseException] = []

    def worker(now: datetime) -> None:
        try:
            barrier.wait()
            ran.append(runner.run_due(now=now))
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    def both(now: datetime) -> None:
        threads = [threading.Thread(target=worker, args=(now,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors, errors

    both(T)  # the clock stands still at T for both
    assert sum(ran) == 4
    for job in jobs:
        assert list(CronRun.objects.filter(job=job).values_list("due_at", flat=True)) == [T]
        job.refresh_from_db()
        assert job.next_run_at == T + timedelta(minutes=1)
        assert job.last_status == "ok" and job.last_run_at == T

    ran.clear()
    both(T)  # the same moment again: nothing is due
    assert ran == [0, 0]
    both(T + timedelta(minutes=1))  # the next due time: once more each
    assert sum(ran) == 4 and CronRun.objects.count() == 8


@pytest.mark.django_db
def test_a_job_missed_many_times_runs_once_and_moves_to_the_future(mind):
    job = due(mind, at=T - timedelta(hours=3))  # 180 due times passed while no worker ran
    assert runner.run_due(now=T) == 1
    job.refresh_from_db()
    assert job.next_run_at == T + timedelta(minutes=1)
    assert CronRun.objects.get().due_at == T - timedelta(hours=3)
    assert runner.run_due(now=T + timedelta(seconds=30)) == 0


@pytest.mark.django_db
def test_a_worker_starting_runs_what_it_missed_once(mind):
    now = timezone.now()
    job = due(mind, at=now - timedelta(hours=2), body={**EVERY_MINUTE, "schedule": "*/5 * * * *"})
    cron_tick_at_start()
    job.refresh_from_db()
    assert CronRun.objects.filter(job=job).count() == 1
    assert now < job.next_run_at <= now + timedelta(minutes=5)


@pytest.mark.django_db
def test_a_claim_fails_once_another_worker_moved_the_job(mind):
    job = due(mind)
    assert runner.claim(job, now=T)
    assert not runner.claim(job, now=T)  # job.next_run_at is the value read before


@pytest.mark.django_db
def test_disabled_jobs_do_not_run(mind):
    job = due(mind)
    CronJob.objects.filter(pk=job.pk).update(enabled=False)
    assert runner.run_due(now=T) == 0


@pytest.mark.django_db
def test_next_due_is_the_soonest_enabled_due_time_within_the_window(mind):
    soon = due(mind, {**EVERY_MINUTE, "name": "soon"}, at=T + timedelta(seconds=30))
    off = due(mind, {**EVERY_MINUTE, "name": "off"}, at=T + timedelta(seconds=10))
    CronJob.objects.filter(pk=off.pk).update(enabled=False)
    due(mind, {**EVERY_MINUTE, "name": "later"}, at=T + timedelta(minutes=2))
    assert runner.next_due(now=T, within=timedelta(seconds=60)) == soon.next_run_at
    assert runner.next_due(now=T, within=timedelta(seconds=20)) is None


@pytest.mark.django_db
def test_a_tick_wakes_the_worker_at_the_next_due_time_not_at_its_own_second(mind, monkeypatch):
    woken: list[datetime] = []
    monkeypatch.setattr(tasks.cron_wake, "schedule", lambda eta: woken.append(eta))
    job = due(mind, at=timezone.now() + timedelta(seconds=20))
    tasks.cron_tick.call_local()
    assert woken == [job.next_run_at]
    CronJob.objects.filter(pk=job.pk).update(next_run_at=timezone.now() + timedelta(minutes=5))
    tasks.cron_tick.call_local()
    assert woken == [job.next_run_at]  # nothing due before the next tick: no wake


# --- Recording ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_run_is_recorded_and_sent_as_cron_run(mind, settings):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True
    webhook_create(mind=mind, body={"url": "https://203.0.113.9/hook", "events": "cron.*"})
    remember(mind, content="The office is in Berlin")
    job = due(mind, {**EVERY_MINUTE, "endpoint": "/memory/contradictions?within=30d&limit=5"})
    runner.run_due(now=T)
    run = CronRun.objects.get()
    assert (run.status, run.response_status, run.started_at) == ("ok", 200, T)
    assert json.loads(run.response_preview) == {"contradictions": [], "total": 0}
    event = WebhookEvent.objects.get(type="cron.run")
    payload = json.loads(event.payload)
    assert payload["data"]["job"] == {
        "id": job.pk,
        "name": "look",
        "endpoint": job.endpoint,
        "method": "GET",
    }
    assert payload["data"]["run"]["status"] == "ok"


@pytest.mark.django_db
def test_a_local_path_runs_as_the_minds_agent(mind, owner_mind):
    for i in range(3):
        remember(mind, key=f"editor_{i}", content=f"Uses editor number {i}", tags=["editor"])
    body = {"older_than": 0, "min_cluster_size": 2}
    due(mind, {**EVERY_MINUTE, "endpoint": "/memory/compact", "body": json.dumps(body)})
    runner.run_due(now=T)
    run = CronRun.objects.get()
    assert run.status == "ok", run.response_preview
    assert run.response_preview.startswith('{"dry_run":false,"clusters_processed":1')
    actors = set(MemoryEvent.objects.filter(action="supersede").values_list("actor", flat=True))
    assert actors == {f"compaction for {owner_mind.mind.key_prefix}"}


@pytest.mark.django_db
def test_a_refused_local_run_is_recorded_as_failed(mind):
    due(mind, {**EVERY_MINUTE, "endpoint": "/memory/contradictions?within=forever"})
    runner.run_due(now=T)
    run = CronRun.objects.get()
    assert (run.status, run.response_status) == ("failed", 400)
    assert "within" in run.response_preview


@pytest.mark.django_db
def test_a_run_that_breaks_is_recorded_and_the_tick_goes_on(mind, monkeypatch):
    first, second = due(mind), due(mind, {**EVERY_MINUTE, "name": "second"})

    def broken(job):
        if job.pk == first.pk:
            raise RuntimeError("a bug")
        return runner.Outcome(200, "{}", 1)

    monkeypatch.setattr(runner, "call", broken)
    assert runner.run_due(now=T) == 2
    statuses = dict(CronRun.objects.values_list("job_id", "status"))
    assert statuses == {first.pk: "failed", second.pk: "ok"}


@pytest.mark.django_db
def test_only_the_newest_runs_are_kept(mind, monkeypatch):
    monkeypatch.setattr(runner, "RUNS_MAX", 2)
    job = due(mind)
    for minute in range(4):
        runner.run_due(now=T + timedelta(minutes=minute))
    kept = CronRun.objects.filter(job=job).values_list("due_at", flat=True)
    assert sorted(kept) == [T + timedelta(minutes=2), T + timedelta(minutes=3)]


# --- Outside URLs --------------------------------------------------------------------------------


def _certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 and its key, PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@contextmanager
def https_receiver(tmp_path, monkeypatch) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An https server on 127.0.0.1 that the sender trusts (its certificate only); yields its
    URL and the requests it got."""
    cert, key = _certificate()
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            received.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": dict(self.headers.items()),
                    "body": self.rfile.read(length),
                }
            )
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"pong")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server.socket = serving.wrap_socket(server.socket, server_side=True)
    trusting = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    monkeypatch.setattr(destinations, "tls_context", lambda: trusting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/hook?from=cron", received
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db
def test_an_outside_url_is_called_over_https_with_its_headers(
    mind, settings, tmp_path, monkeypatch
):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True  # the test's receiver is on loopback
    with https_receiver(tmp_path, monkeypatch) as (url, received):
        due(
            mind,
            {
                "name": "report",
                "schedule": "0 * * * *",
                "endpoint": url,
                "method": "PUT",
                "headers": {"Authorization": "Bearer sk-0123456789"},
                "body": {"report": "daily"},
            },
        )
        assert runner.run_due(now=T) == 1
    (request,) = received
    assert (request["method"], request["path"]) == ("PUT", "/hook?from=cron")
    assert request["headers"]["Authorization"] == "Bearer sk-0123456789"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["headers"]["User-Agent"] == runner.USER_AGENT
    assert json.loads(request["body"]) == {"report": "daily"}
    run = CronRun.objects.get()
    assert (run.status, run.response_status, run.response_preview) == ("ok", 200, "pong")


@pytest.mark.django_db
def test_a_private_address_is_refused_at_run_time_without_sending(mind, settings, no_network):
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = True  # allowed when the job was made
    job = due(mind, {**EVERY_MINUTE, "endpoint": "https://10.1.2.3/in", "method": "POST"})
    settings.SYNAPSE_WEBHOOKS_ALLOW_PRIVATE = False
    assert runner.run_due(now=T) == 1
    run = CronRun.objects.get(job=job)
    assert (run.status, run.response_status) == ("failed", None)
    assert run.response_preview.startswith("Not sent:") and "private" in run.response_preview
