"""Owner-only files whatever the folder (synapse_site/paths.py): the SQLite database with its
-wal and -shm, the job queue and the cache's files, in a data directory that existed 0755."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from synapse_site.paths import private_file, private_sqlite_file

ROOT = Path(__file__).resolve().parents[2]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        created = private_file(tmp_path / "new")
    finally:
        os.umask(old)
    assert mode(created) == 0o600 and created.read_bytes() == b""


def test_an_existing_file_others_may_read_is_made_owner_only_and_kept(tmp_path):
    path = tmp_path / "db.sqlite3"
    path.write_bytes(b"data")
    path.chmod(0o644)
    (tmp_path / "db.sqlite3-wal").write_bytes(b"wal")
    (tmp_path / "db.sqlite3-wal").chmod(0o664)
    private_sqlite_file(path)
    assert mode(path) == 0o600 and path.read_bytes() == b"data"
    assert mode(tmp_path / "db.sqlite3-wal") == 0o600
    assert not (tmp_path / "db.sqlite3-shm").exists()  # only what is there is touched


def test_a_missing_folder_is_left_for_sqlite_to_report(tmp_path):
    assert private_file(tmp_path / "nowhere" / "db.sqlite3") == tmp_path / "nowhere" / "db.sqlite3"
    assert not (tmp_path / "nowhere").exists()


# Run in a fresh Django (settings are read once, at import) under the common umask 022.
SCRIPT = """
import os
os.umask(0o022)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synapse_site.settings")
import django
django.setup()
from django.core.cache import cache
from django.db import connection
from huey.contrib.djhuey import HUEY
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE t (x)")
    cursor.execute("INSERT INTO t VALUES (1)")
cache.set("counter", 1)
HUEY.storage.enqueue(b"job", 0)
data = os.environ["SYNAPSE_DATA_DIR"]
for folder, _, files in os.walk(data):
    for name in files:
        path = os.path.join(folder, name)
        print(oct(os.stat(path).st_mode & 0o777), os.path.relpath(path, data))
"""


@pytest.mark.slow
def test_database_queue_and_cache_files_are_owner_only_in_a_folder_that_was_0755(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "cache").mkdir()
    for folder in (data, data / "cache"):
        folder.chmod(0o755)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"CACHE_URL", "SYNAPSE_JOBS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(SYNAPSE_DATA_DIR=str(data), DATABASE_URL=f"sqlite:///{data}/synapse.sqlite3")
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    modes = dict(reversed(line.split(" ", 1)) for line in result.stdout.splitlines())
    for name in ("synapse.sqlite3", "synapse.sqlite3-wal", "synapse.sqlite3-shm", "jobs.sqlite3"):
        assert name in modes, result.stdout
    assert any(name.startswith("cache/") and name.endswith(".djcache") for name in modes)
    assert {name: m for name, m in modes.items() if m != "0o600"} == {}
