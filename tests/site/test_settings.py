"""Settings are read at import, so each case runs Django in a fresh interpreter."""

import os
import secrets
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import dj_database_url
import psycopg
import pytest

from tests.postgres_url import DEFAULT as POSTGRES_DEFAULT

# Each test starts a fresh Django process (settings are read once, at import).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'synapse_site.settings');"
    "django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
)


def run_django(tmp_path, **env):
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    base.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=base, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "secret", ["short", "django-insecure-" + "x1y2z3" * 10, "a" * 80, "change-me-please" * 5]
)
def test_insecure_secret_key_is_refused_when_debug_is_off(tmp_path, secret):
    result = run_django(tmp_path, SECRET_KEY=secret, DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY is insecure" in result.stderr


def test_insecure_secret_key_is_tolerated_in_debug(tmp_path):
    result = run_django(tmp_path, SECRET_KEY="short", DEBUG="true")
    assert result.returncode == 0, result.stderr


def test_strong_secret_key_from_the_environment_is_used(tmp_path):
    secret = "Zq8-" + "k2Jx9vLmP4" * 6
    result = run_django(tmp_path, SECRET_KEY=secret)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == secret
    assert not (tmp_path / "secret_key").exists()


def test_first_start_generates_an_owner_only_key_and_reuses_it(tmp_path):
    first = run_django(tmp_path)
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first.stdout.strip()) >= 50
    second = run_django(tmp_path)
    assert second.stdout == first.stdout


@pytest.mark.parametrize("value", ["yes please", "2", "maybe"])
def test_boolean_settings_reject_garbage(tmp_path, value):
    result = run_django(tmp_path, DEBUG=value)
    assert result.returncode != 0
    assert "is not a boolean" in result.stderr


def test_bad_cache_url_is_refused(tmp_path):
    result = run_django(tmp_path, CACHE_URL="memcached://x")
    assert result.returncode != 0
    assert "CACHE_URL" in result.stderr


def test_deploy_check_passes_with_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    env.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_BEHIND_TLS="true",
        ALLOWED_HOSTS="synapse.example.com",
        DEBUG="false",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


JOBS_SCRIPT = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'synapse_site.settings');"
    "django.setup(); from huey.contrib.djhuey import HUEY;"
    "print(type(HUEY).__name__, getattr(HUEY.storage, 'filename', ''))"
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("", "SqliteHuey {tmp}/jobs.sqlite3"),
        ("sqlite:///{tmp}/queue.sqlite3", "SqliteHuey {tmp}/queue.sqlite3"),
    ],
)
def test_jobs_queue_is_a_sqlite_file_of_its_own(tmp_path, url, expected):
    base = {k: v for k, v in os.environ.items() if k != "SYNAPSE_JOBS_URL"}
    base.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        SYNAPSE_JOBS_URL=url.format(tmp=tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "-c", JOBS_SCRIPT], cwd=ROOT, env=base, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected.format(tmp=tmp_path)


@pytest.mark.parametrize("url", ["ftp://queue.example", "sqlite://host/q.sqlite3", "sqlite:///"])
def test_bad_jobs_url_is_refused(tmp_path, url):
    result = run_django(tmp_path, SYNAPSE_JOBS_URL=url)
    assert result.returncode != 0
    assert "SYNAPSE_JOBS_URL" in result.stderr


def fresh_clone(tmp_path: Path) -> Path:
    """The project's tracked files in a new folder: no data/, as after `git clone`."""
    clone = tmp_path / "clone"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return clone


def production_env(database_url: str) -> dict[str, str]:
    """deploy.md's /etc/synapse.env less its Redis: the database elsewhere, the key set."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SYNAPSE_") and k not in {"DJANGO_SETTINGS_MODULE", "CACHE_URL"}
    }
    env.update(DATABASE_URL=database_url, SECRET_KEY=secrets.token_urlsafe(64), DEBUG="false")
    return env


def manage(clone: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_manage_py_runs_on_a_fresh_clone_whose_database_is_elsewhere(tmp_path):
    clone = fresh_clone(tmp_path)
    assert not (clone / "data").exists()
    env = production_env("postgres://synapse@127.0.0.1:5432/synapse")
    result = manage(clone, env, "check")
    assert result.returncode == 0, result.stdout + result.stderr
    # The queue's folder, made before huey opened its file there: owner-only.
    assert stat.S_IMODE((clone / "data").stat().st_mode) == 0o700
    assert (clone / "data" / "jobs.sqlite3").exists()


@pytest.mark.slow
def test_migrate_on_a_fresh_clone_against_postgresql(tmp_path):
    server = dj_database_url.parse(
        os.environ.get("SYNAPSE_TEST_DATABASE_URL", "").strip() or POSTGRES_DEFAULT
    )
    params = {
        "host": server["HOST"] or None,
        "port": server["PORT"] or None,
        "user": server["USER"] or None,
        "password": server["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    try:
        admin = psycopg.connect(connect_timeout=3, **params)
    except psycopg.Error as exc:
        pytest.skip(f"no PostgreSQL to migrate: {exc}")
    name = f"synapse_fresh_clone{os.environ.get('SYNAPSE_TEST_DB_SUFFIX', '').strip()}"
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        clone = fresh_clone(tmp_path)
        user = f"{server['USER']}:{server['PASSWORD']}" if server["PASSWORD"] else server["USER"]
        url = f"postgres://{user}@{server['HOST']}:{server['PORT'] or 5432}/{name}"
        result = manage(clone, production_env(url), "migrate", "--noinput")
        assert result.returncode == 0, result.stdout + result.stderr
        assert stat.S_IMODE((clone / "data").stat().st_mode) == 0o700
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
