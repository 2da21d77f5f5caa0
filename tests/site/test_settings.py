"""Settings are read at import, so each case runs Django in a fresh interpreter."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

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
