"""synapse_site/server.py: gunicorn's own errors in the API's shape, and the refusal to face the
network without a buffering proxy in front of the sync workers."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from memories import embeddings
from memories.embeddings import EmbeddingsError, e5, local
from synapse_site.server import (
    exposure_problem,
    preload_embedder,
    prepare_metrics_dir,
    protocol_error_bytes,
)
from tests.reliability.harness import GUNICORN, REPO, GunicornServer


@pytest.mark.parametrize(
    "bind", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.5:80", "unix:/tmp/s"]
)
def test_loopback_and_unix_sockets_are_served(bind):
    assert exposure_problem(bind, 0) is None


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "192.0.2.7:80", "synapse.lan:80"])
def test_a_network_address_needs_a_proxy_in_front(bind):
    problem = exposure_problem(bind, 0)
    assert problem and "SYNAPSE_NUM_PROXIES" in problem and "nginx" in problem
    assert exposure_problem(bind, 1) is None


def test_a_protocol_error_is_a_whole_json_answer():
    head, _, body = protocol_error_bytes(
        414, "URI Too Long", "Request Line is too large"
    ).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414 URI Too Long\r\n")
    assert b"Content-Type: application/json" in head
    assert f"Content-Length: {len(body)}".encode() in head
    assert json.loads(body) == {
        "error": "uri_too_long",
        "detail": "The request line (path and query) is too long: Request Line is too large.",
    }


@pytest.mark.slow
def test_gunicorn_refuses_to_start_on_a_network_address_without_a_proxy(tmp_path):
    # The check runs before gunicorn opens any socket: nothing listens, nothing is sent.
    env = {**os.environ, "SYNAPSE_DATA_DIR": str(tmp_path), "HOST": "0.0.0.0", "PORT": "8799"}
    env.pop("SYNAPSE_NUM_PROXIES", None)
    done = subprocess.run(
        [str(GUNICORN), "--config", "gunicorn.conf.py", "synapse_site.wsgi"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "Refusing to serve on 0.0.0.0:8799" in done.stderr
    assert "Listening at" not in done.stderr


@pytest.mark.parametrize(
    ("backend", "threads", "loaded"),
    [
        ("local", 1, [1]),
        ("local-english", 1, [1]),
        ("local", 2, []),
        ("off", 1, []),
        ("http://127.0.0.1:9/v1", 1, []),
    ],
)
def test_the_master_loads_the_local_model_before_the_workers_fork(
    settings, monkeypatch, backend, threads, loaded
):
    built = []

    class Counted:
        def __init__(self, *, threads):
            built.append(threads)

    monkeypatch.setattr(embeddings, "_embedders", {})
    monkeypatch.setattr(local, "LocalEmbedder", Counted)
    monkeypatch.setattr(e5, "E5Embedder", Counted)
    settings.SYNAPSE_EMBEDDINGS = backend
    settings.SYNAPSE_EMBEDDINGS_MODEL = "" if backend in embeddings.LOCAL else "m"
    settings.SYNAPSE_EMBEDDINGS_THREADS = threads
    preload_embedder()
    assert built == loaded
    # What the master loaded is what every worker's get_embedder() returns after the fork.
    assert len(embeddings._embedders) == len(loaded)


def test_a_model_that_cannot_load_does_not_stop_the_server(settings, monkeypatch, caplog):
    class Refused:
        def __init__(self, *, threads):
            raise EmbeddingsError("the model file is not the pinned one")

    monkeypatch.setattr(embeddings, "_embedders", {})
    monkeypatch.setattr(e5, "E5Embedder", Refused)
    settings.SYNAPSE_EMBEDDINGS = "local"
    settings.SYNAPSE_EMBEDDINGS_THREADS = 1
    preload_embedder()
    assert "the model file is not the pinned one" in caplog.text


def test_gunicorn_starting_first_makes_the_data_directory_owner_only(tmp_path):
    data = tmp_path / "srv" / "data"
    environ = {"SYNAPSE_DATA_DIR": str(data)}
    assert prepare_metrics_dir(environ) == data / "metrics"
    for folder in (tmp_path / "srv", data, data / "metrics"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


FORKED_EXIT = """
import os, sys, time
import onnxruntime  # starts the library's own thread, in this process only
from synapse_site.exits import exit_now
pid = os.fork()
if pid == 0:
    exit_now(3)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print(os.waitstatus_to_exitcode(status))
        sys.exit(0)
    time.sleep(0.05)
os.kill(pid, 9)
print("hung")
"""


def test_a_worker_forked_after_onnxruntime_loaded_exits_at_once_with_its_status():
    # sys.exit in that child hangs in onnxruntime's exit handlers (or aborts) instead.
    done = subprocess.run(
        [sys.executable, "-c", FORKED_EXIT],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


def test_manage_py_run_huey_is_the_one_that_exits_this_way():
    from django.core.management import get_commands

    assert get_commands()["run_huey"] == "memories"


@pytest.mark.slow
def test_two_servers_side_by_side_share_no_control_socket(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    servers = []
    for colour in ("blue", "green"):
        server = GunicornServer(tmp_path / colour, workers=1, env={"HOME": str(home)})
        server.env.pop("XDG_RUNTIME_DIR", None)
        server.env["LOG_LEVEL"] = "INFO"
        (tmp_path / colour).mkdir()
        server.manage("migrate", "--noinput")
        servers.append(server)
    try:
        for server in servers:
            server.start()
        assert servers[0].port != servers[1].port
        for server in servers:
            client = server.client()
            assert client.request("GET", "/health").status == 200
            client.close()
    finally:
        for server in servers:
            server.stop()
    for server in servers:
        assert "Control socket" not in server.log_text(), server.log_text()
    assert not (home / ".gunicorn").exists()
