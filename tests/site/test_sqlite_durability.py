"""SYNAPSE_SQLITE_SYNCHRONOUS picks SQLite's durability: NORMAL (default) or FULL/EXTRA; the
WAL is cut back to 64 MiB at checkpoints whatever the level."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Each test starts a fresh Django process (settings are read once, at import).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = (
    "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'synapse_site.settings');"
    "django.setup(); from django.db import connection;"
    "print(connection.cursor().execute('PRAGMA synchronous').fetchone()[0],"
    " connection.cursor().execute('PRAGMA journal_mode').fetchone()[0],"
    " connection.cursor().execute('PRAGMA journal_size_limit').fetchone()[0])"
)


def run_django(tmp_path, **env):
    unset = {"SECRET_KEY", "DEBUG", "SYNAPSE_SQLITE_SYNCHRONOUS"}
    base = {k: v for k, v in os.environ.items() if k not in unset}
    base.update(
        SYNAPSE_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=base, capture_output=True, text=True
    )


@pytest.mark.parametrize(("value", "level"), [(None, "1"), ("full", "2"), ("EXTRA", "3")])
def test_synchronous_level_follows_the_setting(tmp_path, value, level):
    env = {} if value is None else {"SYNAPSE_SQLITE_SYNCHRONOUS": value}
    result = run_django(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [level, "wal", str(64 * 1024 * 1024)]


@pytest.mark.parametrize("value", ["OFF", "0", "fast"])
def test_unsafe_or_unknown_synchronous_level_is_refused(tmp_path, value):
    result = run_django(tmp_path, SYNAPSE_SQLITE_SYNCHRONOUS=value)
    assert result.returncode != 0
    assert "SYNAPSE_SQLITE_SYNCHRONOUS" in result.stderr
