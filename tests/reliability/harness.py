"""gunicorn started the way `make run` starts it, on a throwaway SQLite file, for tests that
need real processes: crash safety (SIGKILL of the whole server), races over HTTP, chunked
bodies, and what the access log prints.

The server runs in its own process group (master and workers), so `kill()` can SIGKILL all
of it at once, like a power cut of the processes (not of the machine). Ports come from
8770-8789.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"


def free_port() -> int:
    # One the kernel picks: parallel test workers and other runs on this machine never
    # race for the same port out of a fixed range.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self):
        return json.loads(self.body)


class Client:
    """One keep-alive HTTP connection; raises OSError / HTTPException when the server dies."""

    def __init__(self, port: int, *, token: str | None = None, timeout: float = 30):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body=None,
        body: bytes | None = None,
        headers: dict | None = None,
    ) -> Reply:
        all_headers = {**self.headers, **(headers or {})}
        if json_body is not None:
            body = json.dumps(json_body).encode()
            all_headers.setdefault("Content-Type", "application/json")
        self.conn.request(method, path, body=body, headers=all_headers)
        response = self.conn.getresponse()
        data = response.read()
        return Reply(response.status, data, {k.lower(): v for k, v in response.getheaders()})

    def close(self) -> None:
        self.conn.close()


def _live_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (Linux /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp …; comm may hold spaces, so split after the last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


class GunicornServer:
    """A data directory with a migrated SQLite database and a mind, and gunicorn serving it."""

    def __init__(
        self,
        data_dir: Path,
        *,
        workers: int = 2,
        env: dict[str, str] | None = None,
    ):
        self.data_dir = data_dir
        self.db_path = data_dir / "synapse.sqlite3"
        self.port = free_port()
        self.workers = workers
        self.log_path = data_dir / "gunicorn.log"
        self.process: subprocess.Popen | None = None
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_SETTINGS_MODULE", "SYNAPSE_TEST_DB_SUFFIX"}
        }
        self.env.update(
            DATABASE_URL=f"sqlite:///{self.db_path}",
            SECRET_KEY=secrets.token_urlsafe(64),
            SYNAPSE_DATA_DIR=str(data_dir),
            SYNAPSE_RATE_LIMIT="off",
            DEBUG="false",
            HOST="127.0.0.1",
            PORT=str(self.port),
            WEB_CONCURRENCY=str(workers),
            LOG_LEVEL="WARNING",
        )
        self.env.update(env or {})

    # --- Set-up and checks (each a manage.py run, as an operator would do it) -----------------

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)}:\n{result.stdout}{result.stderr}")
        return result

    def create_mind(self, email: str = "crash@example.com") -> str:
        """Migrate (first time) and create a mind; returns its Mind Key."""
        self.manage("migrate", "--noinput")
        out = self.manage("createmind", "--email", email, "--name", "Crash test").stdout
        return next(line for line in out.splitlines() if line.startswith("mk_"))

    # --- The server ---------------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        # A fresh port each start: after a kill, another test run may have taken the old one.
        self.port = free_port()
        self.env["PORT"] = str(self.port)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it; closed below
        try:
            self.process = subprocess.Popen(
                [str(GUNICORN), "--config", "gunicorn.conf.py", "synapse_site.wsgi"],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: killpg reaches the workers
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited early:\n{self.tail()}")
            try:
                client = Client(self.port, timeout=2)
                if client.request("GET", "/health").status == 200:
                    client.close()
                    return
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"/health did not answer within {timeout}s:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the master and every worker at once: nothing gets to clean up."""
        self._signal_group(signal.SIGKILL)

    def stop(self) -> None:
        """Graceful shutdown (SIGTERM), SIGKILL if it takes too long."""
        self._signal_group(signal.SIGTERM, wait=15)

    def _signal_group(self, sig: int, wait: float = 10) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        try:
            self.process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # The workers got the signal with the master; wait until none of them is still
        # running (zombies aside), so a restart finds the port and the database free.
        deadline = time.monotonic() + wait
        while _live_members(self.process.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.process = None

    def client(self, *, token: str | None = None) -> Client:
        return Client(self.port, token=token)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
