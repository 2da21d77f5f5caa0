"""The operator's commands of the README and docs/operations.md, run as printed with bash in a
fresh clone against this machine's services, so a page that drifts from the code fails.

What cannot run as printed, and what stands in: `sudo -u postgres createdb` is `createdb` as
the `postgres` superuser over 127.0.0.1 (the test server trusts local connections), and
`synapse:PASSWORD@db.example.com` is a role of the same kind (no CREATEDB) on 127.0.0.1; the
restore's fixed date is today's. systemd units, nginx, cron and Kubernetes are not run; the
server itself is `tests/site/test_run_and_stop.py`'s and the README's curl examples are
`tests/site/test_examples_run.py`'s.
"""

from __future__ import annotations

import datetime
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import dj_database_url
import psycopg
import pytest

from tests.postgres_url import DEFAULT as POSTGRES_DEFAULT
from tests.reliability.harness import REPO
from tests.site.test_settings import fresh_clone

pytestmark = pytest.mark.slow

OPERATIONS = (REPO / "docs" / "operations.md").read_text()
README = (REPO / "README.md").read_text()
VENV = Path(sys.executable).parent.parent


def section(text: str, title: str) -> str:
    return re.split(r"\n#{2,3} ", text.split(title, 1)[1], maxsplit=1)[0]


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def bash(script: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{script}\n--- out:\n{done.stdout}\n--- err:\n{done.stderr}"
    return done.stdout


@pytest.fixture
def clone(tmp_path) -> Path:
    clone = fresh_clone(tmp_path)
    (clone / ".venv").symlink_to(VENV)
    return clone


def clone_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SYNAPSE_", "DJANGO_", "PROMETHEUS_")) and k != "DATABASE_URL"
    }
    env.update(extra)
    return env


def test_sqlite_backup_and_restore_as_printed(clone):
    env = clone_env()
    create = next(
        line for line in README.splitlines() if line.startswith(".venv/bin/python manage.py create")
    )
    bash(".venv/bin/python manage.py migrate --noinput\n" + create, clone, env)

    backup = section(OPERATIONS, "### SQLite: `manage.py backup`")
    out = bash(sh_blocks(backup)[0], clone, env)
    assert "Backed up 0 memories of 1 minds" in out

    restore = section(OPERATIONS, "### Restore")
    steps = re.findall(r"`((?:mkdir|cp|\.venv/bin/python) [^`]+)`", restore)
    assert len(steps) == 4, steps
    today = datetime.date.today().isoformat()
    out = bash("\n".join(steps).replace("2026-11-30", today), clone, env)
    assert "Search index OK." in out
    restored = sqlite3.connect(clone / "data" / "synapse.sqlite3")
    assert restored.execute("SELECT name FROM minds_mind").fetchall() == [("My assistant",)]
    restored.close()
    assert sorted(p.name for p in (clone / "data" / "old").iterdir())[0] == "synapse.sqlite3"


@pytest.fixture
def postgres_role():
    """A role like the one deploy.md makes (login, password, no CREATEDB), and a database it
    owns made by the superuser; both dropped afterwards."""
    server = dj_database_url.parse(
        os.environ.get("SYNAPSE_TEST_DATABASE_URL", "").strip() or POSTGRES_DEFAULT
    )
    host, port = server["HOST"] or "127.0.0.1", server["PORT"] or 5432
    try:
        admin = psycopg.connect(
            host=host, port=port, user=server["USER"], dbname="postgres", autocommit=True
        )
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL: {exc}")
    role = f"synapse_docs{os.environ.get('SYNAPSE_TEST_DB_SUFFIX', '').strip()}"
    databases = (role, f"{role}_restored")

    def drop() -> None:
        for name in databases:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')

    drop()
    admin.execute(f"CREATE ROLE \"{role}\" LOGIN PASSWORD 'pw' NOCREATEDB")
    admin.execute(f'CREATE DATABASE "{role}" OWNER "{role}"')
    try:
        yield role, f"-h {host} -p {port} -U {server['USER']}", f"{host}:{port}"
    finally:
        drop()
        admin.close()


def test_postgresql_dump_and_restore_as_printed(clone, postgres_role):
    role, superuser, address = postgres_role
    url = f"postgres://{role}:pw@{address}/{role}"
    env = clone_env(DATABASE_URL=url)
    bash(".venv/bin/python manage.py migrate --noinput", clone, env)
    bash(".venv/bin/python manage.py createmind --email pg@example.com --name Pg", clone, env)

    blocks = sh_blocks(section(OPERATIONS, "### PostgreSQL"))
    assert len(blocks) == 2
    today = datetime.date.today().isoformat()
    dump_and_restore, into_a_new_database = (
        block.replace("2026-11-30", today)
        .replace("sudo -u postgres createdb", f"createdb {superuser}")
        .replace("synapse:PASSWORD@db.example.com:5432", f"{role}:pw@{address}")
        .replace("--owner synapse ", f"--owner {role} ")
        .replace("/synapse_restored", f"/{role}_restored")
        .replace(" synapse_restored", f" {role}_restored")
        for block in blocks
    )
    bash(dump_and_restore, clone, env)
    out = bash(into_a_new_database, clone, env)
    assert "Search index OK." in out
    with psycopg.connect(f"postgres://{role}:pw@{address}/{role}_restored") as restored:
        assert restored.execute("SELECT name FROM minds_mind").fetchall() == [("Pg",)]
