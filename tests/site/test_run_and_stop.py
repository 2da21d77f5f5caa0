"""The server started as `make run` starts it, then stopped with SIGTERM (as systemd, honcho or
a terminal stops it): every process of the Procfile ends, none aborts, and an idle stop does
not wait out gunicorn's graceful timeout (gunicorn.conf.py's `worker_exit`, the Makefile's
`exec`)."""

from __future__ import annotations

import http.client
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.harness import REPO, Client, free_port
from tests.site.test_settings import fresh_clone

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
# gunicorn.conf.py's graceful_timeout: a stop that takes this long waited for a stuck worker.
GRACEFUL_TIMEOUT = 10
# What a worker that died in its C++ exit handlers, or was killed for hanging there, leaves.
ABORTS = ("terminate called", "what():", "SIGABRT", "SIGKILL", "was sent SIG")


def environment(data_dir: Path, port: int) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "SYNAPSE_TEST_DB_SUFFIX", "PROMETHEUS_MULTIPROC_DIR"}
    }
    env.update(
        DATABASE_URL=f"sqlite:///{data_dir}/synapse.sqlite3",
        SECRET_KEY=secrets.token_urlsafe(64),
        SYNAPSE_DATA_DIR=str(data_dir),
        DEBUG="false",
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY="2",
        PATH=f"{BIN}:{env.get('PATH', '')}",
    )
    return env


def process_table() -> dict[int, tuple[int, str, str]]:
    """{pid: (ppid, state, start time)} of every process (Linux /proc)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(entry.name)] = (int(fields[1]), fields[0], fields[19])
    return table


def descendants(pid: int) -> set[tuple[int, str]]:
    """(pid, start time) of each process below `pid`: honcho starts each of the Procfile's
    processes in a session of its own, so a process group would not find them."""
    table = process_table()
    found: set[tuple[int, str]] = set()
    parents = {pid}
    while parents:
        children = {p for p, (ppid, _, _) in table.items() if ppid in parents}
        found |= {(p, table[p][2]) for p in children}
        parents = children
    return found


def still_running(processes: set[tuple[int, str]]) -> list[str]:
    table = process_table()
    left = []
    for pid, started in processes:
        if pid in table and table[pid][2] == started and table[pid][1] != "Z":
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            left.append(f"{pid} {cmdline.decode(errors='replace').strip()}")
    return left


def wait_until_serving(process: subprocess.Popen, port: int, log: Path) -> None:
    """/health answers and the worker said it started."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert process.poll() is None, f"exited early:\n{log.read_text(errors='replace')}"
        if "Huey consumer started" in log.read_text(errors="replace"):
            try:
                client = Client(port, timeout=2)
                if client.request("GET", "/health").status == 200:
                    client.close()
                    return
            except (OSError, http.client.HTTPException):
                pass
        time.sleep(0.1)
    raise AssertionError(f"not serving within 90 s:\n{log.read_text(errors='replace')}")


def start_and_stop(command: list[str], data_dir: Path, log: Path, cwd: Path = REPO) -> float:
    """Start `command` in `cwd` (with PORT in its environment), wait until it serves, SIGTERM
    it, and return how long it took to end; fails if any process it started outlives it."""
    port = free_port()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [part.replace("{port}", str(port)) for part in command],
            cwd=cwd,
            env=environment(data_dir, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as a service manager starts it: no terminal's group
        )
    started: set[tuple[int, str]] = set()
    try:
        wait_until_serving(process, port, log)
        started = descendants(process.pid)
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        took = time.monotonic() - began
        # Zombies aside, nothing it started may still run once it has ended.
        deadline = time.monotonic() + 2
        while still_running(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = still_running(started)
        assert not left, f"still running after the stop: {left}\n{log.read_text()}"
        return took
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for pid, started_at in started | descendants(process.pid):
            if still_running({(pid, started_at)}):
                os.kill(pid, signal.SIGKILL)


def assert_clean_stop(log: Path, took: float) -> None:
    text = log.read_text(errors="replace")
    assert not [line for line in text.splitlines() if any(a in line for a in ABORTS)], text
    assert took < GRACEFUL_TIMEOUT, f"the stop took {took:.1f} s:\n{text}"


@pytest.fixture
def migrated(tmp_path) -> Path:
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO,
        env=environment(data_dir, 0),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return data_dir


def test_the_procfile_stops_cleanly_ten_times_in_a_row(migrated, tmp_path, capsys):
    honcho = [str(BIN / "honcho"), "start", "--procfile", "Procfile"]
    times = []
    for n in range(10):
        log = tmp_path / f"honcho-{n}.log"
        took = start_and_stop([*honcho, "--port", "{port}"], migrated, log)
        times.append(took)
        assert_clean_stop(log, took)
    with capsys.disabled():
        print(f"\nstops of honcho + Procfile (s): {', '.join(f'{t:.2f}' for t in times)}")


@pytest.mark.skipif(BIN != REPO / ".venv" / "bin", reason="`make run` runs the project's own .venv")
def test_make_run_leaves_nothing_behind_when_stopped(migrated, tmp_path, capsys):
    # In a clone of its own: make run's collectstatic must not rewrite the static files that
    # the servers of tests running beside it are reading. `-o install`: the virtualenv is the
    # one running these tests; make must not reinstall it.
    clone = fresh_clone(tmp_path)
    (clone / ".venv").symlink_to(REPO / ".venv")
    log = tmp_path / "make-run.log"
    make_run = ["make", "--no-print-directory", "-o", "install", "run"]
    took = start_and_stop(make_run, migrated, log, cwd=clone)
    assert_clean_stop(log, took)
    with capsys.disabled():
        print(f"\nstop of make run (s): {took:.2f}")
