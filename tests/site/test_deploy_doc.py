"""docs/deploy.md's PostgreSQL and Redis set-up, followed as printed on one machine standing in
for two hosts: its shell blocks and env file are read from the page, its commands run with
bash, two web processes and two background workers are started by the units' ExecStart, and
what the page promises is checked: a memory stored on one host is read and found on the
other, the workers give it a vector, the rate limit is one count for both hosts, a JWT made by
one host is good on the other, and every process ends on SIGTERM.

What cannot run as printed, and what stands in:
- `sudo -u postgres createuser/createdb` are the same commands as the `postgres` superuser over
  127.0.0.1 (trusted there); `--pwprompt` reads the password from its standard input.
- `synapse`, `PASSWORD`, `db.example.com` and `redis.example.com` are a role (no CREATEDB) and
  a database of a random name, dropped at the end, a random password, and this machine's
  PostgreSQL and Redis (databases 13 and 14 instead of 0 and 1, flushed before and after).
- Two hosts are two fresh clones, each a `/srv/synapse` with its own `data/` in tmp.
- systemd: each unit's ExecStart runs with bash in its WorkingDirectory after
  `set -a; . synapse.env; set +a`, the env file being /etc/synapse.env's lines in tmp (mode
  600) with a port the kernel picks for each host and `SYNAPSE_RATE_LIMIT=20/min` added; it is
  stopped with SIGTERM, as `systemctl stop` does.
- nginx and TLS are not run: requests go straight to gunicorn with the headers the printed
  nginx site sets (Host, X-Forwarded-Proto, X-Forwarded-For, X-Request-Id).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shlex
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import dj_database_url
import psycopg
import pytest

from tests.postgres_url import DEFAULT as POSTGRES_DEFAULT
from tests.reliability.harness import REPO, free_port
from tests.site.test_docs_run import README, VENV, section, sh_blocks
from tests.site.test_run_and_stop import descendants, still_running
from tests.site.test_settings import fresh_clone

pytestmark = pytest.mark.slow

DEPLOY = (REPO / "docs" / "deploy.md").read_text()
REDIS = os.environ.get("SYNAPSE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Stand-ins for the page's Redis databases 0 (cache) and 1 (task queue).
REDIS_DATABASES = {"0": 13, "1": 14}
RATE_LIMIT = 20
PUBLIC_HOST = "synapse.example.com"
# What the printed nginx site adds to every request it passes on.
NGINX_HEADERS = {
    "Host": PUBLIC_HOST,
    "X-Forwarded-Proto": "https",
    "X-Forwarded-For": "192.0.2.10",
}


# --- The page -----------------------------------------------------------------------------------


def env_file_block() -> str:
    return next(
        block
        for block in sh_blocks(section(DEPLOY, "## gunicorn behind nginx"))
        if block.startswith("# /etc/synapse.env")
    )


def unit(name: str) -> dict[str, str]:
    """`Key=value` lines of the printed systemd unit /etc/systemd/system/<name>."""
    block = next(b for b in re.findall(r"```ini\n(.*?)```", DEPLOY, re.S) if name in b.split()[1])
    return dict(line.split("=", 1) for line in block.splitlines() if re.match(r"\w+=", line))


def manage_lines(title: str) -> list[str]:
    return [
        line.split("#")[0].strip()
        for block in sh_blocks(section(DEPLOY, title))
        for line in block.splitlines()
        if line.startswith(".venv/bin/python manage.py ")
    ]


# --- The machine's services -----------------------------------------------------------------------


@pytest.fixture
def postgres():
    """The superuser's connection and a fresh name for deploy.md's role and database; both are
    dropped afterwards."""
    server = dj_database_url.parse(
        os.environ.get("SYNAPSE_TEST_DATABASE_URL", "").strip() or POSTGRES_DEFAULT
    )
    params = {"host": server["HOST"] or "127.0.0.1", "port": server["PORT"] or 5432}
    try:
        admin = psycopg.connect(
            **params,
            user=server["USER"],
            password=server["PASSWORD"] or None,
            dbname="postgres",
            autocommit=True,
            connect_timeout=3,
        )
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL at {params['host']}:{params['port']}: {exc}")
    name = f"synapse_deploy_{secrets.token_hex(4)}"
    try:
        yield {**params, "superuser": server["USER"], "password": server["PASSWORD"], "name": name}
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{name}"')
        admin.close()


@pytest.fixture
def redis_server():
    import redis

    url = dj_database_url.parse(REDIS.replace("redis://", "postgres://", 1))
    address = f"{url['HOST'] or '127.0.0.1'}:{url['PORT'] or 6379}"
    clients = [
        redis.Redis.from_url(f"redis://{address}/{db}", socket_connect_timeout=1)
        for db in REDIS_DATABASES.values()
    ]
    try:
        clients[0].ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {address} ({exc}); set SYNAPSE_TEST_REDIS_URL")
    for client in clients:
        client.flushdb()
    yield address
    for client in clients:
        client.flushdb()
        client.close()


# --- Shell and HTTP ---------------------------------------------------------------------------


def base_env() -> dict[str, str]:
    """What a service manager starts a unit with, before its EnvironmentFile."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
    }


def bash(script: str, cwd: Path, *, stdin: str = "", env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=cwd,
        env=env or base_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,  # no terminal: createuser reads the password from stdin
    )
    assert done.returncode == 0, f"{script}\n--- out:\n{done.stdout}\n--- err:\n{done.stderr}"
    return done.stdout


def with_env_file(env_file: Path, command: str) -> str:
    return f"set -a; . {shlex.quote(str(env_file))}; set +a\n{command}"


def request(port: int, method: str, path: str, *, token=None, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    all_headers = {**NGINX_HEADERS, "X-Request-Id": secrets.token_hex(8), **(headers or {})}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        all_headers["Content-Type"] = "application/json"
    try:
        conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=all_headers
        )
        response = conn.getresponse()
        raw = response.read()
        return response.status, (json.loads(raw) if raw.startswith((b"{", b"[")) else raw)
    finally:
        conn.close()


def poll(what: str, check, timeout: float, logs: list[Path]):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException):
            if result := check():
                return result
        time.sleep(0.2)
    tails = "\n".join(f"--- {log.name}:\n{log.read_text(errors='replace')[-3000:]}" for log in logs)
    raise AssertionError(f"{what} within {timeout:.0f} s\n{tails}")


# --- The test -----------------------------------------------------------------------------------


def test_postgresql_and_redis_set_up_serves_from_two_hosts_as_printed(
    tmp_path, postgres, redis_server
):
    name, password = postgres["name"], secrets.token_hex(12)
    database_address = f"{name}:{password}@{postgres['host']}:{postgres['port']}/{name}"
    superuser = f"createuser -h {postgres['host']} -p {postgres['port']} -U {postgres['superuser']}"

    def here(text: str) -> str:
        """The page's names of other machines, roles and passwords, as this machine has them."""
        text = (
            text.replace("sudo -u postgres createuser", superuser)
            .replace("sudo -u postgres createdb", superuser.replace("createuser", "createdb"))
            .replace("--pwprompt synapse", f"--pwprompt {name}")
            .replace("--owner synapse synapse", f"--owner {name} {name}")
            .replace("synapse:PASSWORD@db.example.com:5432/synapse", database_address)
        )
        return re.sub(
            r"redis\.example\.com:6379/(\d+)",
            lambda m: f"{redis_server}/{REDIS_DATABASES[m.group(1)]}",
            text,
        )

    hosts = []
    for host in ("a", "b"):
        clone = fresh_clone(tmp_path / host)
        (clone / ".venv").symlink_to(VENV)
        hosts.append(clone)
    host_a, host_b = hosts
    setup_env = base_env()
    if postgres["password"]:
        setup_env["PGPASSWORD"] = postgres["password"]

    # "PostgreSQL": the role, its database, migrate and the index check, from one host.
    create_and_migrate = here(sh_blocks(section(DEPLOY, "## PostgreSQL"))[0])
    assert "migrate" in create_and_migrate and name in create_and_migrate
    out = bash(create_and_migrate, host_a, stdin=f"{password}\n{password}\n", env=setup_env)
    assert "Search index OK." in out

    # "gunicorn behind nginx": /etc/synapse.env, with "Redis"'s CACHE_URL among its lines.
    redis_export = sh_blocks(section(DEPLOY, "## Redis"))[0].strip()
    printed = env_file_block()
    # "Several workers": every process of every host shares one task queue, named in this file.
    assert re.search(r"^SYNAPSE_JOBS_URL=redis://", printed, re.M), printed
    assert redis_export.removeprefix("export ") in printed.splitlines()
    placeholder = re.search(r"<the output of: (.+)>", printed)
    secret_key = bash(placeholder.group(1), tmp_path).strip()
    env_files = []
    for clone in hosts:
        lines = here(printed).replace(placeholder.group(0), secret_key)
        lines = re.sub(r"^PORT=8000$", f"PORT={free_port()}", lines, flags=re.M)
        lines += f"SYNAPSE_RATE_LIMIT={RATE_LIMIT}/min\n"
        env_file = clone.parent / "synapse.env"
        env_file.write_text(lines)
        env_file.chmod(0o600)
        env_files.append(env_file)
    # Every line as printed, but for the stand-ins above.
    substituted = {"DATABASE_URL", "CACHE_URL", "SYNAPSE_JOBS_URL", "SECRET_KEY", "PORT"}
    written = env_files[0].read_text().splitlines()
    assert written[-1] == f"SYNAPSE_RATE_LIMIT={RATE_LIMIT}/min"
    for as_printed, as_written in zip(printed.splitlines(), written, strict=False):
        assert as_written == as_printed or as_printed.split("=")[0] in substituted, as_written
    ports = [int(re.search(r"^PORT=(\d+)$", f.read_text(), re.M).group(1)) for f in env_files]

    # The steps the units' paragraph names (migrate, collectstatic, as in "Upgrades"): migrate
    # once, from host a; static files on every host. Then the README's mind, on host a.
    upgrade = manage_lines("## Upgrades and migrations")
    assert ".venv/bin/python manage.py collectstatic --noinput" in upgrade
    bash(with_env_file(env_files[0], "\n".join(upgrade)), host_a)
    collectstatic = [line for line in upgrade if "collectstatic" in line]
    bash(with_env_file(env_files[1], "\n".join(collectstatic)), host_b)
    createmind = next(
        line for line in README.splitlines() if line.startswith(".venv/bin/python manage.py create")
    )
    out = bash(with_env_file(env_files[0], createmind), host_a)
    mind_key = next(line for line in out.splitlines() if line.startswith("mk_"))

    # The units: synapse.service and synapse-worker.service on each host.
    web, worker = unit("synapse.service"), unit("synapse-worker.service")
    assert web["EnvironmentFile"] == worker["EnvironmentFile"] == "/etc/synapse.env"
    processes: list[tuple[subprocess.Popen, Path]] = []
    started: set[tuple[int, str]] = set()
    try:
        for host, clone, env_file in zip("ab", hosts, env_files, strict=True):
            for service in (web, worker):
                assert service["WorkingDirectory"] == "/srv/synapse"
                command = service["ExecStart"].replace(service["WorkingDirectory"], str(clone))
                kind = "web" if service is web else "worker"
                log = tmp_path / f"{host}-{kind}.log"
                with open(log, "wb") as out_file:
                    processes.append(
                        (
                            subprocess.Popen(
                                ["bash", "-c", with_env_file(env_file, f"exec {command}")],
                                cwd=clone,
                                env=base_env(),
                                stdout=out_file,
                                stderr=subprocess.STDOUT,
                                start_new_session=True,
                            ),
                            log,
                        )
                    )
        logs = [log for _, log in processes]

        def alive() -> None:
            for process, log in processes:
                assert process.poll() is None, f"{log.name} exited:\n{log.read_text()[-3000:]}"

        for log in logs[1::2]:
            poll(
                f"{log.name}: no worker",
                lambda log=log: alive() or "Huey consumer started" in log.read_text(),
                60,
                logs,
            )
        for port in ports:
            poll(
                "ready",
                lambda p=port: alive() or request(p, "GET", "/health/ready")[0] == 200,
                60,
                logs,
            )
        for process, _ in processes:
            started |= descendants(process.pid)

        # Straight to gunicorn over plain HTTP (no proxy said https): redirected.
        status, _ = request(ports[0], "GET", "/health", headers={"X-Forwarded-Proto": "http"})
        assert status == 301

        # A memory stored on host a is read and found by keyword on host b.
        body = {"category": "fact", "content": "Lives in Berlin"}
        status, stored = request(ports[0], "POST", "/memory", token=mind_key, body=body)
        assert status == 201, stored
        status, read = request(ports[1], "GET", f"/memory/{stored['id']}", token=mind_key)
        assert (status, read["content"]) == (200, "Lives in Berlin"), read
        status, found = request(
            ports[1], "GET", "/memory/search?q=berlin&mode=keyword", token=mind_key
        )
        assert status == 200 and [r["id"] for r in found["results"]] == [stored["id"]], found

        # A worker gives it a vector, seen from host b.
        def embedded():
            status, stats = request(ports[1], "GET", "/memory/stats", token=mind_key)
            assert status == 200, stats
            return stats["pending_embedding"] == 0 and stats["embedded"] >= 1 and stats

        poll("no vector", embedded, 60, logs)

        # One SECRET_KEY: a JWT made by host a is good on host b, and its mind's key on both.
        account = {"email": "ops@example.com", "password": secrets.token_urlsafe(16)}
        assert request(ports[0], "POST", "/register", body=account)[0] == 202
        status, tokens = request(ports[0], "POST", "/login", body=account)
        assert status == 200, tokens
        status, mind = request(
            ports[1], "POST", "/minds", token=tokens["access"], body={"name": "Rate"}
        )
        assert status == 201, mind

        # One count of the rate limit for both hosts (Redis at CACHE_URL).
        statuses = [
            (port, request(port, "GET", "/memory", token=mind["mind_key"])[0])
            for _ in range(RATE_LIMIT)
            for port in ports
        ]
        assert Counter(status for _, status in statuses) == {200: RATE_LIMIT, 429: RATE_LIMIT}
        assert {port for port, status in statuses if status == 429} == set(ports)

        for port in ports:
            status, ready = request(port, "GET", "/health/ready")
            assert (status, ready["status"]) == (200, "ready"), ready

        # `systemctl stop`: SIGTERM to each unit's process; nothing they started may outlive it.
        for process, _ in processes:
            process.send_signal(signal.SIGTERM)
        for process, _ in processes:
            process.wait(timeout=30)
        deadline = time.monotonic() + 5
        while still_running(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not still_running(started), "\n".join(log.read_text()[-2000:] for log in logs)
    finally:
        for process, _ in processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for pid, started_at in started:
            if still_running({(pid, started_at)}):
                os.kill(pid, signal.SIGKILL)
